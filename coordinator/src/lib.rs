//! The tilesolve coordinator: owns batches, the per-iteration frontier scheduler and the store,
//! and serves the `tilesolve.v1` gRPC API.
//!
//! Layout:
//! - [`frontier`]: splits one IDA* iteration of a puzzle into deduplicated subtree tasks, from
//!   what the last one measured ([`size_history`]).
//! - [`queue`]: the ready queue's order (batches first come, first served; within a batch, its
//!   waves in order; within a wave, subtrees where one thread's IDA* meets them).
//! - [`scheduler`]: batches in, subtree tasks out, leases, results in, answers stored; parts
//!   that own their state, calls between them going one way.
//! - [`store`]: answers and batch records in its own logs, items, search states and task
//!   records in sled trees; the only module that touches sled.
//! - `cycle`: the scheduler behind its lock, taken there only: the lock cycle every change goes
//!   through (deferred work run outside the lock, records written, flushes, waiters woken).
//! - [`table_supply`]: obtains the pattern tables waiting batches need, in the background:
//!   from a worker that holds them, else built, then loaded off the scheduler's lock.
//! - [`service`]: the gRPC services; the only place generated proto types meet the scheduler.
//! - [`simulate`]: replays a recorded run with any number of virtual workers under the same
//!   policy.
//! - [`auth`]: the bearer-token check in front of the services.
//! - [`notices`]: completion notices POSTed, signed, to the URL a batch named as it ends,
//!   from the store, with retries, outside the scheduler.
//! - [`owners`]: the owners file: each client token's owner, role and limits, reloaded on SIGHUP.
//! - [`connections`]: closes connections that move no byte for the idle timeout, and every
//!   connection once serving has ended.
//! - [`web`]: the dashboard page, its JSON API and live events, and `/metrics`, on the same port.
//! - [`history`]: the work over time (solved, nodes, queue), sampled into the store for the
//!   dashboard's charts.
//! - [`request_origin`]: what a web request must show of where it comes from (JSON writes; a
//!   local host name when there is no token).
//! - [`rpc_metrics`]: per-method gRPC latency histograms (a middleware on the gRPC routes).
//! - [`server`]: `run(listener, config, shutdown)`, with TLS when configured.

pub mod auth;
pub mod compressed_tables;
pub mod connections;
pub(crate) mod cycle;
pub mod frontier;
pub mod history;
pub mod notices;
pub mod owners;
pub mod queue;
pub mod request_origin;
pub mod rpc_metrics;
pub mod scheduler;
pub mod server;
pub mod service;
pub mod simulate;
pub mod size_history;
pub mod store;
pub mod table_supply;
pub mod web;
