//! The broker library: see main.rs
