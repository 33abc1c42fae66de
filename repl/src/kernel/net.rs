//! The kernel's five ZeroMQ sockets, served by one thread on a tokio runtime: requests
//! from shell/control/stdin go to the engine thread; replies and IOPub messages come
//! back through one ordered queue. Interrupt and shutdown requests are answered here,
//! so they work while a cell runs; so is the heartbeat. Stream output is coalesced
//! (a few ms) into one `stream` message, flushed before any other message so order holds.

use super::wire::{ConnectionInfo, Message, Signer};
use bytes::Bytes;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use zeromq::{PubSocket, RepSocket, RouterSocket, Socket, SocketRecv, SocketSend, ZmqMessage};

/// The sockets a request can arrive on or a message be sent to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Channel {
    Shell,
    Control,
    Stdin,
    Iopub,
}

/// What the engine thread hands to the network thread.
pub enum Outgoing {
    /// A message for a socket (signed and framed here).
    Send(Channel, Message),
    /// Text printed by the running cell (`name` is `stdout` or `stderr`).
    Stream {
        parent: Value,
        name: &'static str,
        text: String,
    },
}

/// A checked request for the engine thread.
pub struct Incoming {
    pub channel: Channel,
    pub msg: Message,
}

/// The engine thread's ends of the two queues.
pub struct Net {
    pub out: UnboundedSender<Outgoing>,
    pub incoming: mpsc::Receiver<Incoming>,
}

struct Sockets {
    shell: RouterSocket,
    control: RouterSocket,
    stdin: RouterSocket,
    iopub: PubSocket,
}

/// Binds the sockets and starts serving them; fails if a port cannot be bound.
pub fn start(
    info: ConnectionInfo,
    signer: Signer,
    interrupt: Arc<AtomicBool>,
    kernel_info: Value,
) -> Result<Net, String> {
    let (out, out_rx) = unbounded_channel();
    let (in_tx, incoming) = mpsc::channel();
    let (ready_tx, ready_rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("kiln-kernel-net".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(format!("cannot start the runtime: {e}")));
                    return;
                }
            };
            rt.block_on(async move {
                let sockets = match bind(&info).await {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                let server = Server {
                    signer,
                    to_engine: in_tx,
                    interrupt,
                    kernel_info,
                    pending: None,
                };
                server.serve(sockets, out_rx).await;
            });
        })
        .map_err(|e| format!("cannot start the network thread: {e}"))?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(Net { out, incoming }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err("the network thread stopped".into()),
    }
}

async fn bind(info: &ConnectionInfo) -> Result<Sockets, String> {
    let mut s = Sockets {
        shell: RouterSocket::new(),
        control: RouterSocket::new(),
        stdin: RouterSocket::new(),
        iopub: PubSocket::new(),
    };
    let mut hb = RepSocket::new();
    let at = |port| info.endpoint(port);
    let fail = |what: &str, e: zeromq::ZmqError| format!("cannot bind the {what} socket: {e}");
    s.shell
        .bind(&at(info.shell_port))
        .await
        .map_err(|e| fail("shell", e))?;
    s.control
        .bind(&at(info.control_port))
        .await
        .map_err(|e| fail("control", e))?;
    s.stdin
        .bind(&at(info.stdin_port))
        .await
        .map_err(|e| fail("stdin", e))?;
    s.iopub
        .bind(&at(info.iopub_port))
        .await
        .map_err(|e| fail("iopub", e))?;
    hb.bind(&at(info.hb_port))
        .await
        .map_err(|e| fail("heartbeat", e))?;
    tokio::spawn(async move {
        // the heartbeat: every message comes straight back
        loop {
            match hb.recv().await {
                Ok(m) => {
                    let _ = hb.send(m).await;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    });
    Ok(s)
}

enum Event {
    In(Channel, zeromq::ZmqResult<ZmqMessage>),
    Out(Outgoing),
    Tick,
    Closed,
}

struct Server {
    signer: Signer,
    to_engine: mpsc::Sender<Incoming>,
    interrupt: Arc<AtomicBool>,
    kernel_info: Value,
    /// Stream text not sent yet: (parent header, stream name, text).
    pending: Option<(Value, &'static str, String)>,
}

impl Server {
    async fn serve(mut self, mut s: Sockets, mut out_rx: UnboundedReceiver<Outgoing>) {
        let mut tick = tokio::time::interval(Duration::from_millis(20));
        loop {
            let ev = tokio::select! {
                m = s.shell.recv() => Event::In(Channel::Shell, m),
                m = s.control.recv() => Event::In(Channel::Control, m),
                m = s.stdin.recv() => Event::In(Channel::Stdin, m),
                o = out_rx.recv() => o.map_or(Event::Closed, Event::Out),
                _ = tick.tick() => Event::Tick,
            };
            match ev {
                Event::In(ch, Ok(m)) => self.received(&mut s, ch, m).await,
                Event::In(ch, Err(e)) => {
                    eprintln!("kiln kernel: receive error on {ch:?}: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Event::Out(Outgoing::Stream { parent, name, text }) => match &mut self.pending {
                    Some((p, n, t)) if *p == parent && *n == name => t.push_str(&text),
                    _ => {
                        self.flush(&mut s).await;
                        self.pending = Some((parent, name, text));
                    }
                },
                Event::Out(Outgoing::Send(ch, msg)) => {
                    self.flush(&mut s).await;
                    self.send(&mut s, ch, &msg).await;
                }
                Event::Tick => self.flush(&mut s).await,
                Event::Closed => {
                    self.flush(&mut s).await;
                    return;
                }
            }
        }
    }

    /// Sends the coalesced stream text, if any.
    async fn flush(&mut self, s: &mut Sockets) {
        if let Some((parent, name, text)) = self.pending.take() {
            let content = json!({"name": name, "text": text});
            let msg = Message::iopub(&self.signer, &parent, "stream", content);
            self.send(s, Channel::Iopub, &msg).await;
        }
    }

    async fn send(&self, s: &mut Sockets, ch: Channel, msg: &Message) {
        let frames: Vec<Bytes> = self
            .signer
            .encode(msg)
            .into_iter()
            .map(Bytes::from)
            .collect();
        let Ok(zmsg) = ZmqMessage::try_from(frames) else {
            return;
        };
        let r = match ch {
            Channel::Shell => s.shell.send(zmsg).await,
            Channel::Control => s.control.send(zmsg).await,
            Channel::Stdin => s.stdin.send(zmsg).await,
            Channel::Iopub => s.iopub.send(zmsg).await,
        };
        if let Err(e) = r {
            eprintln!("kiln kernel: cannot send {} on {ch:?}: {e}", msg.msg_type());
        }
    }

    /// A received message: checked, then answered here (interrupt, shutdown, control's
    /// kernel_info) or passed to the engine thread. Bad messages are logged and dropped.
    async fn received(&mut self, s: &mut Sockets, ch: Channel, m: ZmqMessage) {
        let frames = m.into_vec().into_iter().map(|b| b.to_vec()).collect();
        let msg = match self.signer.decode(frames) {
            Ok(msg) => msg,
            Err(why) => {
                eprintln!("kiln kernel: rejected a message on {ch:?}: {why}");
                return;
            }
        };
        match (ch, msg.msg_type()) {
            (Channel::Control, "interrupt_request") => {
                self.interrupt.store(true, Ordering::Relaxed);
                let reply = msg.child(&self.signer, "interrupt_reply", json!({"status": "ok"}));
                self.send(s, ch, &reply).await;
            }
            (Channel::Control | Channel::Shell, "shutdown_request") => {
                let restart = msg.content.get("restart").cloned().unwrap_or(json!(false));
                let content = json!({"status": "ok", "restart": restart});
                self.flush(s).await;
                let reply = msg.child(&self.signer, "shutdown_reply", content);
                self.send(s, ch, &reply).await;
                self.interrupt.store(true, Ordering::Relaxed);
                // let the reply leave before the process ends
                tokio::time::sleep(Duration::from_millis(100)).await;
                std::process::exit(0);
            }
            (Channel::Control, "kernel_info_request") => {
                let reply = msg.child(&self.signer, "kernel_info_reply", self.kernel_info.clone());
                self.send(s, ch, &reply).await;
            }
            _ => {
                let _ = self.to_engine.send(Incoming { channel: ch, msg });
            }
        }
    }
}
