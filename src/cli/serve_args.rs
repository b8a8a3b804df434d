//! Arguments of `wulf serve`: where to listen, and the limits the server
//! sets on its clients (it never trusts theirs).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::units::{parse_bytes, parse_duration};

/// `wulf serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0")]
    pub bind: std::net::IpAddr,
    /// Control port.
    #[arg(long, default_value_t = crate::peer::DEFAULT_PORT)]
    pub port: u16,
    /// Largest message a client may request.
    #[arg(long, default_value = "1Gi", value_parser = parse_bytes, value_name = "BYTES")]
    pub max_size: u64,
    /// Longest timeout a client may set for the data channel (how long the
    /// server waits on a silent client).
    #[arg(long, default_value = "60s", value_parser = parse_duration, value_name = "DURATION")]
    pub max_timeout: Duration,
    /// Longest test a client may run, from its handshake to its end.
    #[arg(long, default_value = "10m", value_parser = parse_duration, value_name = "DURATION")]
    pub max_session: Duration,
    /// Longest a client may take from connecting to a complete set-up
    /// (a client trickling bytes is dropped after it).
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub max_handshake: Duration,
    /// File holding a shared secret every client must prove it knows
    /// (default: the WULF_SECRET environment variable; none: any client).
    #[arg(long, value_name = "FILE")]
    pub secret_file: Option<PathBuf>,
    /// Only these addresses or networks may connect (CIDR, comma-separated,
    /// e.g. 10.0.0.0/8,192.168.1.5).
    #[arg(long, value_delimiter = ',', value_parser = parse_net, value_name = "CIDR,...")]
    pub allow: Vec<ipnet::IpNet>,
    /// Let clients pin the server's measuring thread to a CPU they choose
    /// (`--cpus`); otherwise the server runs unpinned and says so.
    #[arg(long)]
    pub allow_pinning: bool,
    /// Let clients run a background load on this machine during their test
    /// (`wulf sweep --load-peer`); off by default.
    #[arg(long)]
    pub allow_load: bool,
    /// Offer the lean stacks (raw, xdp: raw frames, a NIC's queue) to
    /// clients on other hosts; loopback clients always may use them.
    #[arg(long)]
    pub allow_lean: bool,
    /// Most memory one test's buffers may map (both pools; --nocache pools
    /// span twice the last-level cache).
    #[arg(long, default_value = "512Mi", value_parser = parse_bytes, value_name = "BYTES")]
    pub max_memory: u64,
    /// Serve one client, then exit.
    #[arg(long, hide = true)]
    pub once: bool,
    /// Print the port on stdout when listening (used for local peers).
    #[arg(long, hide = true)]
    pub announce: bool,
}

/// An address (one host) or a network in CIDR notation.
fn parse_net(text: &str) -> Result<ipnet::IpNet, String> {
    let text = text.trim();
    if let Ok(net) = text.parse::<ipnet::IpNet>() {
        return Ok(net);
    }
    text.parse::<std::net::IpAddr>()
        .map(ipnet::IpNet::from)
        .map_err(|_| {
            format!("'{text}' is neither an address nor a network (CIDR such as 10.0.0.0/8)")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_and_hosts_parse() {
        assert_eq!(parse_net("10.0.0.0/8").unwrap().to_string(), "10.0.0.0/8");
        assert_eq!(
            parse_net("192.168.1.5").unwrap().to_string(),
            "192.168.1.5/32"
        );
        assert_eq!(parse_net("::1").unwrap().to_string(), "::1/128");
        assert!(parse_net("10.0.0.0/33").is_err());
        assert!(parse_net("example.org").is_err());
    }
}
