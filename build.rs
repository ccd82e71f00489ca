//! Compiles `proto/` into Rust with protox (a pure-Rust protobuf compiler), so building needs no
//! system `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = ["tilesolve/v1/client.proto", "tilesolve/v1/worker.proto"];
    for proto in protos {
        println!("cargo:rerun-if-changed=proto/{proto}");
    }
    let descriptors = protox::compile(protos, ["proto"])?;
    // The encoded descriptors also go into the binary for gRPC server reflection.
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out_dir.join("tilesolve_descriptor.bin"),
        prost::Message::encode_to_vec(&descriptors),
    )?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}
