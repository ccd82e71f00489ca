//! `tilesolve hash-token`: the SHA-256 by which an owners file (`serve --owners`) names a
//! token, so the file never holds the token itself; with `--new`, a new token and its hash.

use std::io::BufRead;

use crate::output::outln;
use anyhow::{bail, Context};
use clap::Args;
use tilesolve_coordinator::owners::{new_token, token_sha256_hex};

#[derive(Args)]
pub struct HashTokenArgs {
    /// Make a new random token (32 bytes, in hex) and print it and its hash, instead of
    /// reading a token from standard input.
    #[arg(long)]
    new: bool,
}

pub fn run(args: HashTokenArgs) -> anyhow::Result<bool> {
    if args.new {
        let token = new_token().map_err(|_| anyhow::anyhow!("no randomness for a new token"))?;
        outln!("token = \"{token}\"")?;
        outln!("token_sha256 = \"{}\"", token_sha256_hex(&token))?;
        return Ok(true);
    }
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("reading the token from standard input")?;
    let token = line.trim_end_matches(['\n', '\r']);
    if token.is_empty() {
        bail!("no token on standard input: `tilesolve hash-token < FILE`, or --new for a new one");
    }
    outln!("{}", token_sha256_hex(token))?;
    Ok(true)
}
