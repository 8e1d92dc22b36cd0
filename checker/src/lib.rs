//! Pure history checkers.
