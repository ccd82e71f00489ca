//! Compiles `proto/` into Rust with protox (a pure-Rust protobuf compiler), so building needs no
//! system `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = ["tilesolve/v1/tilesolve.proto"];
    for proto in protos {
        println!("cargo:rerun-if-changed=proto/{proto}");
    }
    let descriptors = protox::compile(protos, ["proto"])?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}
