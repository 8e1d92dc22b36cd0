//! The controller: the role ZooKeeper and Kafka's controller play together. It
//! tracks broker liveness through heartbeats, elects partition leaders, accepts or
//! fences ISR changes, and tells the brokers (LeaderAndIsr) whenever a partition's
//! leader or ISR changes. Its state survives restarts.
//!
//! Layers: `election` and `state` are the pure rules (no I/O, time passed in);
//! `store` persists the durable part; `service` runs events through the rules under
//! one lock, persisting and pushing their effects; `push` sends LeaderAndIsr; `http`
//! is the routes.

mod election;
mod http;
mod push;
mod service;
mod state;
mod store;

use std::sync::Arc;
use std::time::Instant;

use crate::auth::ClusterAuth;
use crate::cli::ControllerArgs;
use service::Controller;
use state::{Config, ControllerState};
use store::Store;

/// Run the controller process until it is killed.
pub fn run(args: ControllerArgs) -> Result<(), Box<dyn std::error::Error>> {
    if args.brokers.0.is_empty() {
        return Err(
            "--brokers lists no broker; give e.g. 1=127.0.0.1:9001,2=127.0.0.1:9002".into(),
        );
    }
    if args.session_timeout_ms == 0 {
        return Err("--session-timeout-ms must be positive".into());
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(serve(args))
}

async fn serve(args: ControllerArgs) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(&args.data_dir)
        .map_err(|e| format!("cannot create data dir {}: {e}", args.data_dir.display()))?;
    let store = Store::new(&args.data_dir);
    let durable = store.load()?;
    let config = Config {
        session_timeout_ms: args.session_timeout_ms,
        unclean_election: args.unclean_election,
    };
    let ids: Vec<_> = args.brokers.0.iter().map(|(id, _)| *id).collect();
    let clock = Instant::now();
    let (state, effects) = ControllerState::start(config, &ids, durable, 0)?;
    // The bumped controller epoch is durable before anyone can see it.
    store.save(&state.durable()).map_err(|e| {
        format!(
            "cannot persist the controller state in {}: {e}",
            args.data_dir.display()
        )
    })?;
    for line in &effects.events {
        eprintln!("{line}");
    }
    for event in &effects.transitions {
        crate::events::emit(crate::events::CONTROLLER, event);
    }
    let auth = ClusterAuth::from_args(args.cluster_id.as_deref(), args.secret_file.as_deref())?;
    if auth.is_none() {
        eprintln!(
            "controller: no --cluster-id and secret: internal requests are not authenticated"
        );
    }
    let pusher = push::Pusher::new(&args.brokers.0, auth.as_ref())?;
    let controller = Arc::new(Controller::new(state, store, pusher, clock));
    let listener = crate::server::bind_and_announce(args.listen, &args.data_dir).await?;
    tokio::spawn(controller.clone().run_ticker());
    axum::serve(listener, http::router(controller, auth.map(Arc::new))).await?;
    Ok(())
}
