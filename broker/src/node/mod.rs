//! The node process (`broker node`): the shell around the replicas, shaped like the
//! controller's. The rules live in [`crate::replica`] (pure, returning effects); here
//! is what carries them out, in layers that only import downwards:
//!
//! - `context`: who this node is (id, broker epoch), its settings, clock and links to
//!   peers and the controller;
//! - `partitions`: the hosted partitions (`partition`: replica, log, purgatory) and the
//!   one way a replica changes, which carries out its effects (checkpoints, fetch
//!   orders, wake-ups);
//! - the tasks and handlers over them: `fetcher` (follower fetch tasks), `isr`
//!   (AlterPartition proposals), `heartbeat` (liveness and the controller's view),
//!   `housekeeping` (flush and checkpoint timers), `api` (the HTTP routes), with
//!   `purgatory` where delayed requests wait;
//! - this module: the process, which starts them all — and, on a controller voter,
//!   the controller ([`crate::controller`]) beside them, its routes merged with the
//!   node's — and stops cleanly on SIGTERM.

mod api;
mod context;
mod fetcher;
mod heartbeat;
mod housekeeping;
mod isr;
mod partitions;
mod purgatory;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::auth::ClusterAuth;
use crate::cli::NodeArgs;
use crate::controller;
use crate::protocol::BrokerId;
use crate::server;
use context::Context;
use partitions::ReplicaManager;

/// Run the node process until it is killed or stopped (SIGTERM, SIGINT).
pub fn run(args: NodeArgs) -> Result<(), Box<dyn std::error::Error>> {
    if args.id <= 0 {
        return Err(format!("--id {} must be a positive integer", args.id).into());
    }
    if args.peers.0.iter().any(|(id, _)| *id == args.id) {
        return Err(format!("--peers must not list this broker's own id {}", args.id).into());
    }
    let auth = ClusterAuth::from_args(args.cluster_id.as_deref(), args.secret_file.as_deref())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = server::bind_and_announce(args.listen, &args.data_dir).await?;
        let mut own = axum::serve::Listener::local_addr(&listener)?;
        if own.ip().is_unspecified() {
            own.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        let mut brokers: BTreeMap<BrokerId, String> = args.peers.0.iter().cloned().collect();
        brokers.insert(args.id, own.to_string());
        let (voters, voter_addrs) = match &args.controller_voters {
            Some(given) => controller::voter_addresses(args.id, given, &brokers)?,
            None => {
                let mut addrs = brokers.clone();
                addrs.remove(&args.id);
                (brokers.keys().copied().collect(), addrs)
            }
        };
        let ctx = Context::new(
            &args,
            auth.clone(),
            own.to_string(),
            voters.clone(),
            voter_addrs.clone(),
        )
        .map_err(|e| format!("broker epoch: {e}"))?;
        let ctx = Arc::new(ctx);
        announce(&ctx, &args, &voters);
        let controller = match voters.contains(&args.id) {
            false => None,
            true => {
                let settings = controller::Settings {
                    id: args.id,
                    brokers,
                    voters: voters.clone(),
                    voter_addrs,
                    data_dir: args.data_dir.clone(),
                    config: args.settings.controller.clone(),
                    auth,
                    bugs: ctx.config.bugs,
                    disk: ctx.config.log.faults.clone(),
                };
                Some(controller::start(settings).await?)
            }
        };
        if let Some((c, _)) = &controller {
            let _ = ctx.local_controller.set(c.clone());
        }
        let (manager, fetch_orders) = ReplicaManager::new(ctx.clone());
        let manager = Arc::new(manager);
        tokio::spawn(fetcher::run(manager.clone(), fetch_orders));
        tokio::spawn(heartbeat::run(manager.clone()));
        tokio::spawn(isr::run(manager.clone()));
        tokio::spawn(housekeeping::run(manager.clone()));
        let routes = match controller {
            Some((_, routes)) => api::router(manager.clone(), false).merge(routes),
            None => api::router(manager.clone(), true),
        };
        let server = axum::serve(listener, routes);
        tokio::select! {
            served = server => served?,
            () = stop_signal() => {
                housekeeping::shut_down(&manager);
                eprintln!("node {}: stopped (logs flushed, checkpoints written)", ctx.id);
            }
        }
        Ok(())
    })
}

/// What a starting broker says on stderr: how internal requests are authenticated,
/// its broker epoch, truncation and voters, and a planted bug if there is one.
fn announce(ctx: &Context, args: &NodeArgs, voters: &[BrokerId]) {
    match &ctx.auth {
        Some(auth) => eprintln!(
            "node {}: cluster `{}`: internal requests need its credentials",
            ctx.id,
            auth.cluster_id()
        ),
        None => eprintln!(
            "node {}: no --cluster-id and secret: internal requests are not authenticated",
            ctx.id
        ),
    }
    eprintln!(
        "node {}: broker epoch {}, truncation {:?}, controller voters {voters:?}",
        ctx.id,
        ctx.broker_epoch(),
        ctx.config.truncation
    );
    if let Some(bug) = args.settings.bug {
        eprintln!("node {}: PLANTED BUG {bug:?} (--bug)", ctx.id);
    }
}

/// SIGTERM or SIGINT (a SIGKILL, of course, gives no such chance).
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
