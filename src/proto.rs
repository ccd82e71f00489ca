//! Types generated from `proto/tilesolve/v1` by `build.rs`.
//!
//! Only the service layer (coordinator and worker RPC code) may use these; everything else works
//! on the crate's own types so that a protocol change never reaches the search kernel.

/// Package `tilesolve.v1`.
pub mod v1 {
    tonic::include_proto!("tilesolve.v1");
}
