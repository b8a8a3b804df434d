//! The one-rank communicator: collectives are identities and a message can
//! only go to oneself, where it waits in a queue until received.

use super::Communicator;
use anyhow::{bail, ensure, Result};
use std::cell::RefCell;
use std::collections::VecDeque;

/// A communicator of size 1 for serial runs.
#[derive(Debug, Default)]
pub struct SerialComm {
    /// Messages sent to ourselves and not yet received, oldest first.
    queue: RefCell<VecDeque<Vec<u8>>>,
}

impl SerialComm {
    /// A serial communicator (rank 0 of 1).
    pub fn new() -> Self {
        Self::default()
    }
}

impl Communicator for SerialComm {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn backend_name(&self) -> &str {
        "serial"
    }

    fn send_bytes(&self, to: usize, data: &[u8]) -> Result<()> {
        ensure!(to == 0, "serial communicator: no rank {to}");
        self.queue.borrow_mut().push_back(data.to_vec());
        Ok(())
    }

    fn recv_bytes(&self, from: usize, buf: &mut [u8]) -> Result<()> {
        ensure!(from == 0, "serial communicator: no rank {from}");
        let Some(message) = self.queue.borrow_mut().pop_front() else {
            // Waiting would wait forever: nobody else can send.
            bail!("serial communicator: receive with no message sent");
        };
        ensure!(
            message.len() == buf.len(),
            "serial communicator: message of {} bytes, buffer of {}",
            message.len(),
            buf.len()
        );
        buf.copy_from_slice(&message);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collectives_are_identities_and_self_messages_queue() {
        let comm = SerialComm::new();
        let mut v = [1.0, -2.0];
        comm.allreduce_sum_f64(&mut v).unwrap();
        comm.allreduce_max_f64(&mut v).unwrap();
        assert_eq!(v, [1.0, -2.0]);
        let mut all = [0.0; 2];
        comm.allgather_f64(&v, &mut all).unwrap();
        assert_eq!(all, v);
        comm.barrier().unwrap();
        comm.send(0, &[3.0]).unwrap();
        comm.send(0, &[4.0]).unwrap();
        let mut got = [0.0];
        comm.recv(0, &mut got).unwrap();
        assert_eq!(got, [3.0]);
        comm.recv(0, &mut got).unwrap();
        assert_eq!(got, [4.0]);
        assert!(comm.recv(0, &mut got).is_err());
        assert!(comm.send(1, &[0.0]).is_err());
    }
}
