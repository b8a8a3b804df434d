//! A client's test on a server, once its handshake is over
//! ([`super::session`]): what the server allows checked, the data channel
//! opened, then the client's blocks one by one until it says goodbye.

use std::net::IpAddr;

use anyhow::{bail, Context, Result};

use super::protocol::{ControlChannel, Reply, Request, Setup};
use super::session::{name, LocalTransports, SessionPolicy, SlotGuard};
use super::watchdog::Watchdog;
use crate::measure::loops::{server_block, Pools};
use crate::sys::{pin_current_thread, Host};
use crate::transport;

/// Largest buffer misalignment a client may ask for, bytes.
const MAX_OFFSET_BYTES: u64 = 1 << 20;

/// A client's test, after the handshake.
pub(super) struct Test<'a> {
    pub(super) policy: &'a SessionPolicy,
    /// The transport the setup names, looked up once (None: unknown here).
    pub(super) transport: Option<Box<dyn transport::Transport>>,
    pub(super) setup: &'a Setup,
    pub(super) local_ip: IpAddr,
    pub(super) client_ip: IpAddr,
    pub(super) dog: &'a Watchdog,
    /// The test slot (None: a local peer's session, which has none).
    pub(super) slot: Option<&'a SlotGuard>,
}

impl Test<'_> {
    /// Refuse what this server does not allow; the warnings for what it
    /// quietly declines.
    fn check(&self) -> Result<Vec<String>> {
        let (setup, policy) = (self.setup, self.policy);
        if setup.max_bytes == 0 {
            bail!("a largest message of 0 bytes: messages are at least 1 byte");
        }
        if setup.max_bytes > policy.max_bytes {
            bail!(
                "messages of {} bytes exceed this server's --max-size of {} bytes",
                setup.max_bytes,
                policy.max_bytes
            );
        }
        if setup.channel.timeout() > policy.max_timeout {
            bail!(
                "a timeout of {} exceeds this server's --max-timeout of {}",
                humantime::format_duration(setup.channel.timeout()),
                humantime::format_duration(policy.max_timeout)
            );
        }
        if setup.offset_bytes > MAX_OFFSET_BYTES {
            bail!(
                "a buffer offset of {} bytes exceeds the largest a server accepts ({MAX_OFFSET_BYTES} bytes)",
                setup.offset_bytes
            );
        }
        // What a test costs is the server's decision, checked before any
        // of it is spent: a client once had an open server run 22 load
        // threads, touch 2.2 GB with nocache pools, and attach XDP to a NIC.
        if setup.loads.is_some() && !policy.allow_load {
            bail!("this server does not run loads for its clients (start it with --allow-load)");
        }
        if self.transport.as_ref().is_some_and(|t| t.claims_nic())
            && !policy.allow_lean_remote
            && !self.client_ip.is_loopback()
        {
            bail!(
                "transport {} takes a NIC's queue or sends raw frames: this server offers it to other hosts only with --allow-lean",
                setup.transport
            );
        }
        let pools = 2 * crate::message::buffers::pool_bytes(
            setup.max_bytes,
            setup.offset_bytes,
            setup.nocache,
            Host::probe().llc_bytes,
        ) + crate::measure::checked::patterns_bytes(setup.max_bytes);
        if pools > policy.max_memory_bytes {
            bail!(
                "buffers of {pools} bytes for messages of {} bytes{} exceed this server's --max-memory of {} bytes",
                setup.max_bytes,
                if setup.nocache { " with --nocache" } else { "" },
                policy.max_memory_bytes
            );
        }
        let mut warnings = Vec::new();
        if setup.cpu.is_some() && !policy.allow_pinning {
            warnings.push(
                "this server does not let clients pin its threads (start it with --allow-pinning); not pinned"
                    .to_string(),
            );
        }
        Ok(warnings)
    }

    /// Run the test: check it, open the data channel, serve its blocks.
    pub(super) fn run(&self, ch: &mut ControlChannel) -> Result<()> {
        let setup = self.setup;
        let mut warnings = self.check()?;
        let transport = self.transport.as_ref().with_context(|| {
            format!(
                "this server does not know the transport '{}'",
                setup.transport
            )
        })?;
        if transport.local_only()
            && self.policy.local_transports == LocalTransports::LoopbackClients
            && !self.client_ip.is_loopback()
        {
            bail!(
                "transport {} works only between processes of one machine: this server offers it only to clients on its own loopback address",
                setup.transport
            );
        }
        if let Err(why) = transport.availability() {
            bail!(
                "transport {} is unavailable on the server: {why}",
                setup.transport
            );
        }
        let cpu = setup
            .cpu
            .filter(|_| self.policy.allow_pinning)
            .filter(|&c| pin_current_thread(c).is_ok());
        // `--load-peer`: the client's load runs here for the whole test;
        // the guard stops and joins it however the test ends.
        let mut loads = match &setup.loads {
            Some(text) => {
                let specs = crate::load::parse_loads(text)
                    .map_err(|e| anyhow::anyhow!("the requested load: {e}"))?;
                crate::load::peer::check_allowed(&specs, crate::sys::cpu_count())?;
                Some(crate::load::Loads::start(&specs)?)
            }
            None => None,
        };
        let mut listener = transport.listen(&setup.channel, self.local_ip)?;
        listener.expect_peer(self.client_ip);
        self.dog.guard(listener.abort_handle());
        ch.send(&Reply::Listening {
            description: listener.describe(),
            // With the interface towards the client: a shaper on this side
            // may be the slower end of the path.
            host: Host::probe().with_interface_for_peer(self.client_ip),
        })?;
        let mut conn = listener.accept(setup.channel.timeout())?;
        self.dog.guard(conn.endpoint.abort_handle());
        let host = Host::probe();
        let mut pools = Pools::new(
            conn.endpoint.as_mut(),
            setup.max_bytes,
            setup.offset_bytes,
            setup.nocache,
            host.llc_bytes,
        )?;
        warnings.extend(conn.warnings);
        ch.send(&Reply::Ready {
            settings: conn.settings,
            warnings,
            cpu,
        })?;
        let outcome = self.blocks(ch, conn.endpoint.as_mut(), &mut pools, &mut loads);
        // The test is over, however it ended: the client said goodbye after
        // its last block's Done (so it holds every message it asked for), or
        // it went away, or the data channel failed. Frames this end still
        // has unacknowledged are needed by nobody: a final acknowledgement
        // the client sent and the link lost would otherwise keep the drop
        // resending into a closed channel (the frame protocol's linger, up
        // to about a second at its longest timeout) while the slot is held.
        // What remains (closing the channel in the kernel, the pools, the
        // load) runs with the slot marked ending, so that the next client
        // waits for it instead of being turned away.
        conn.endpoint.abandon();
        if let Some(slot) = self.slot {
            slot.ending();
        }
        outcome
    }

    /// The client's blocks, until it says goodbye.
    fn blocks(
        &self,
        ch: &mut ControlChannel,
        endpoint: &mut dyn transport::Endpoint,
        pools: &mut Pools,
        loads: &mut Option<crate::load::Loads>,
    ) -> Result<()> {
        let setup = self.setup;
        loop {
            match ch.recv()? {
                Request::Block {
                    mode,
                    kind,
                    bytes,
                    repeats,
                } => {
                    // Checked before use: a block of 0 bytes once panicked
                    // the session thread (a range end out of bounds).
                    if bytes == 0 || bytes > setup.max_bytes {
                        bail!(
                            "a block of {bytes} bytes is outside 1 to the announced maximum {}",
                            setup.max_bytes
                        );
                    }
                    let m = server_block(endpoint, pools, mode, kind, bytes, repeats)
                        .context("data channel failed")?;
                    ch.send(&Reply::Done {
                        user_ns: m.cpu.user.as_nanos() as u64,
                        sys_ns: m.cpu.system.as_nanos() as u64,
                        elapsed_ns: m.elapsed_ns,
                        run_delay_ns: m.run_delay_ns,
                        helper_cpu_ns: m.helper_cpu_ns,
                    })?;
                }
                Request::StopLoads => {
                    let records = loads.take().map(|l| l.stop()).unwrap_or_default();
                    ch.send(&Reply::Loads { loads: records })?;
                }
                Request::Bye => return Ok(()),
                other => bail!("{} in the middle of a test", name(&other)),
            }
        }
    }
}
