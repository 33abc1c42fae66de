//! The engine side of the kernel: runs on the main thread, takes one request at a time
//! from the network thread, and answers execute, complete, inspect, is_complete,
//! kernel_info, comm_info and history requests, publishing busy/idle, the cell's
//! input, its streams, rich displays, its result and its error on IOPub.

use super::net::{Channel, Incoming, Net, Outgoing};
use super::wire::{Message, Signer};
use crate::repl::complete;
use kiln::{Engine, Value};
use serde_json::{json, Map, Value as Json};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;

pub struct Kernel {
    engine: Engine,
    signer: Signer,
    net: Net,
    /// The execution counter (`In [n]`).
    count: u64,
    /// The header of the request being handled: the parent of every output it makes.
    parent: Rc<RefCell<Json>>,
    kernel_info: Json,
}

impl Kernel {
    pub fn new(mut engine: Engine, signer: Signer, net: Net, kernel_info: Json) -> Kernel {
        let parent = Rc::new(RefCell::new(json!({})));
        for (name, err) in [("stdout", false), ("stderr", true)] {
            let (out, parent) = (net.out.clone(), parent.clone());
            let hook = Box::new(move |s: &str| {
                let _ = out.send(Outgoing::Stream {
                    parent: parent.borrow().clone(),
                    name,
                    text: s.to_string(),
                });
            });
            if err {
                engine.set_error_output(hook);
            } else {
                engine.set_output(hook);
            }
        }
        let (out, p, s) = (net.out.clone(), parent.clone(), signer.clone());
        engine.set_display(Box::new(move |bundle| {
            let content = json!({"data": bundle_json(bundle), "metadata": {}, "transient": {}});
            let msg = Message::iopub(&s, &p.borrow(), "display_data", content);
            let _ = out.send(Outgoing::Send(Channel::Iopub, msg));
        }));
        Kernel {
            engine,
            signer,
            net,
            count: 0,
            parent,
            kernel_info,
        }
    }

    /// Serves requests until the network thread goes away.
    pub fn run(mut self) {
        while let Ok(Incoming { channel, msg }) = self.net.incoming.recv() {
            if channel == Channel::Stdin {
                continue; // an input_reply with no input_request waiting
            }
            self.status(&msg, "busy");
            *self.parent.borrow_mut() = msg.header.clone();
            let reply = match msg.msg_type() {
                "execute_request" => Some(("execute_reply", self.execute(&msg))),
                "kernel_info_request" => Some(("kernel_info_reply", self.kernel_info.clone())),
                "complete_request" => Some(("complete_reply", self.complete(&msg.content))),
                "inspect_request" => Some(("inspect_reply", self.inspect(&msg.content))),
                "is_complete_request" => Some(("is_complete_reply", is_complete(&msg.content))),
                "comm_info_request" => {
                    Some(("comm_info_reply", json!({"status": "ok", "comms": {}})))
                }
                "history_request" => {
                    Some(("history_reply", json!({"status": "ok", "history": []})))
                }
                other => {
                    eprintln!("kiln kernel: ignoring unsupported message type {other:?}");
                    None
                }
            };
            if let Some((reply_type, content)) = reply {
                let reply = msg.child(&self.signer, reply_type, content);
                self.send(channel, reply);
            }
            self.status(&msg, "idle");
        }
    }

    fn send(&self, ch: Channel, msg: Message) {
        let _ = self.net.out.send(Outgoing::Send(ch, msg));
    }

    fn publish(&self, parent: &Message, msg_type: &str, content: Json) {
        let msg = Message::iopub(&self.signer, &parent.header, msg_type, content);
        self.send(Channel::Iopub, msg);
    }

    fn status(&self, parent: &Message, state: &str) {
        self.publish(parent, "status", json!({"execution_state": state}));
    }

    /// Runs a cell; the value of a final expression becomes `execute_result`.
    fn execute(&mut self, msg: &Message) -> Json {
        let c = &msg.content;
        let code = c.get("code").and_then(Json::as_str).unwrap_or("");
        let silent = c.get("silent").and_then(Json::as_bool).unwrap_or(false);
        let store = c
            .get("store_history")
            .and_then(Json::as_bool)
            .unwrap_or(!silent);
        if store && !silent {
            self.count += 1;
        }
        let n = self.count;
        if !silent {
            self.publish(
                msg,
                "execute_input",
                json!({"code": code, "execution_count": n}),
            );
        }
        self.engine
            .interrupt_handle()
            .store(false, Ordering::Relaxed);
        let mut r = self.engine.run_source(code, &format!("<cell {n}>"));
        if let Ok(v) = &r {
            if !silent && !matches!(v, Value::None) {
                match self.engine.mime_bundle(v) {
                    Ok(bundle) => {
                        let content = json!({"execution_count": n, "data": bundle_json(bundle), "metadata": {}});
                        self.publish(msg, "execute_result", content);
                    }
                    Err(e) => r = Err(e),
                }
            }
        }
        match r {
            Ok(_) => {
                json!({"status": "ok", "execution_count": n, "user_expressions": {}, "payload": []})
            }
            Err(e) => {
                let text = self.engine.render_error(&e);
                let mut err = json!({
                    "ename": &*e.type_name,
                    "evalue": e.message,
                    "traceback": text.trim_end().lines().collect::<Vec<_>>(),
                });
                if !silent {
                    self.publish(msg, "error", err.clone());
                }
                if let Some(o) = err.as_object_mut() {
                    o.insert("status".into(), json!("error"));
                    o.insert("execution_count".into(), json!(n));
                }
                err
            }
        }
    }

    /// Completion of the word before the cursor, with the REPL's candidates.
    fn complete(&self, c: &Json) -> Json {
        let code = c.get("code").and_then(Json::as_str).unwrap_or("");
        let cursor = cursor_byte(code, c);
        let line_start = code[..cursor].rfind('\n').map_or(0, |i| i + 1);
        let line = &code[line_start..cursor];
        let (start, matches) = if line.trim().is_empty() {
            (line.len(), Vec::new())
        } else {
            complete::complete(&self.engine, line, line.len())
        };
        json!({
            "status": "ok",
            "matches": matches,
            "cursor_start": code[..line_start + start].chars().count(),
            "cursor_end": code[..cursor].chars().count(),
            "metadata": {},
        })
    }

    /// The inspector's text for the (dotted) name under the cursor.
    fn inspect(&mut self, c: &Json) -> Json {
        let code = c.get("code").and_then(Json::as_str).unwrap_or("");
        let cursor = cursor_byte(code, c);
        let is_name = |ch: char| ch.is_alphanumeric() || ch == '_' || ch == '.';
        let start = code[..cursor].rfind(|ch| !is_name(ch)).map_or(0, |i| i + 1);
        let end = code[cursor..]
            .find(|ch| !is_name(ch))
            .map_or(code.len(), |i| cursor + i);
        let name = code[start..end].trim_matches('.');
        let text = complete::resolve(&self.engine, name).and_then(|v| self.engine.inspect(&v).ok());
        match text {
            Some(t) => {
                json!({"status": "ok", "found": true, "data": {"text/plain": t}, "metadata": {}})
            }
            None => json!({"status": "ok", "found": false, "data": {}, "metadata": {}}),
        }
    }
}

/// A MIME bundle as the `data` object of a display message.
fn bundle_json(bundle: Vec<(String, String)>) -> Json {
    Json::Object(
        bundle
            .into_iter()
            .map(|(k, v)| (k, Json::String(v)))
            .collect::<Map<_, _>>(),
    )
}

/// The request's `cursor_pos` (in characters, protocol 5.2+) as a byte offset into `code`.
fn cursor_byte(code: &str, c: &Json) -> usize {
    let pos = c
        .get("cursor_pos")
        .and_then(Json::as_u64)
        .map_or(usize::MAX, |p| p as usize);
    code.char_indices().nth(pos).map_or(code.len(), |(i, _)| i)
}

/// Whether a cell is complete (the REPL's continuation rule), with the next line's
/// indent when it is not.
fn is_complete(c: &Json) -> Json {
    let code = c.get("code").and_then(Json::as_str).unwrap_or("");
    if !kiln::is_incomplete(&format!("{code}\n")) {
        return json!({"status": "complete"});
    }
    let last = code.lines().last().unwrap_or("");
    let mut indent: String = last.chars().take_while(|c| c.is_whitespace()).collect();
    if last.trim_end().ends_with(':') {
        indent.push_str(complete::INDENT);
    }
    json!({"status": "incomplete", "indent": indent})
}
