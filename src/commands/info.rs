//! `wulf info`: the machine and network fingerprint that every result
//! carries, on its own.

use anyhow::Result;

use crate::cli::InfoArgs;
use crate::peer::client::resolve;
use crate::peer::DEFAULT_PORT;
use crate::sys::{describe_interface, Host};

/// Run `wulf info`.
pub fn execute(args: &InfoArgs) -> Result<()> {
    let mut host = Host::probe();
    match &args.peer {
        Some(p) => {
            let addr = resolve(p, DEFAULT_PORT, false)?;
            host = host.with_interface_for_peer(addr.ip());
        }
        None => {
            // Every interface, loopback last: the one a user cares about is
            // rarely lo.
            let mut names: Vec<String> = std::fs::read_dir("/sys/class/net")
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            names.sort_by_key(|n| (n == "lo", n.clone()));
            host.interfaces = names.iter().map(|n| describe_interface(n)).collect();
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&host)?);
        return Ok(());
    }
    // The text includes each interface's TCP goodput limit and PCIe warning.
    print!("{}", host.describe_text());
    Ok(())
}
