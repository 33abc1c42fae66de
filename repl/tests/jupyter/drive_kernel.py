"""Drives `kiln kernel` with the real jupyter_client, as a notebook front end does.

usage: python drive_kernel.py KILN_EXE WORKDIR
Installs the kernelspec under WORKDIR (`kiln kernel install --prefix`), starts the
kernel through jupyter_client's KernelManager, and checks each behaviour of the
messaging protocol the Kiln kernel promises. Prints `CHECK name` per passed check and
`ALL OK` at the end; any failure raises (non-zero exit). Run by repl/tests/jupyter.rs.
"""
import base64
import os
import struct
import subprocess
import sys
import time

kiln, work = sys.argv[1], sys.argv[2]
subprocess.run([kiln, "kernel", "install", "--prefix", work], check=True)
os.environ["JUPYTER_PATH"] = os.path.join(work, "share", "jupyter")

import jupyter_client  # noqa: E402
from jupyter_client.manager import start_new_kernel  # noqa: E402

TIMEOUT = 60


def check(name, cond, detail=""):
    if not cond:
        raise AssertionError(f"{name}: {detail}")
    print("CHECK", name, flush=True)


def run(kc, code):
    """Executes a cell; returns (reply content, [iopub (msg_type, content, arrival time)])."""
    msgs = []
    reply = kc.execute_interactive(
        code, timeout=TIMEOUT,
        output_hook=lambda m: msgs.append((m["msg_type"], m["content"], time.monotonic())))
    return reply["content"], msgs


def of(msgs, kind):
    return [c for t, c, _ in msgs if t == kind]


km, kc = start_new_kernel(kernel_name="kiln", startup_timeout=TIMEOUT)
try:
    info = kc.kernel_info(reply=True, timeout=TIMEOUT)["content"]
    li = info["language_info"]
    check("kernel_info", li["name"] == "kiln" and li["file_extension"] == ".dl"
          and li["pygments_lexer"] == "python" and info["protocol_version"] == "5.3", info)

    import zmq
    ctx = zmq.Context.instance()
    hb = ctx.socket(zmq.REQ)
    hb.connect(f"{km.transport}://{km.ip}:{km.hb_port}")
    hb.send(b"ping-42")
    check("heartbeat", hb.poll(5000) and hb.recv() == b"ping-42")
    hb.close()

    reply, msgs = run(kc, "1 + 1")
    res = of(msgs, "execute_result")
    check("execute_result", reply["status"] == "ok" and len(res) == 1
          and res[0]["data"]["text/plain"] == "2"
          and res[0]["execution_count"] == reply["execution_count"], (reply, msgs))

    reply, msgs = run(kc, "x = 5\nprint('a')\nprint('b', 2)")
    text = "".join(c["text"] for c in of(msgs, "stream") if c["name"] == "stdout")
    check("stdout stream", text == "a\nb 2\n" and not of(msgs, "execute_result"), msgs)
    states = [c["execution_state"] for c in of(msgs, "status")]
    check("busy then idle", states == ["busy", "idle"], states)

    reply, msgs = run(kc, "x * 2")
    check("state kept", of(msgs, "execute_result")[0]["data"]["text/plain"] == "10", msgs)

    reply, msgs = run(kc, "import sys\nprint('oops', file=sys.stderr)")
    err = "".join(c["text"] for c in of(msgs, "stream") if c["name"] == "stderr")
    check("stderr stream", err == "oops\n", msgs)

    reply, msgs = run(kc, "def f(d):\n    return 1 / d\nf(0)")
    e = of(msgs, "error")
    check("error", reply["status"] == "error" and reply["ename"] == "ZeroDivisionError"
          and len(e) == 1 and e[0]["ename"] == "ZeroDivisionError"
          and any("line 2" in l for l in e[0]["traceback"]), (reply, e))
    reply, msgs = run(kc, "x + 1")
    check("alive after error", of(msgs, "execute_result")[0]["data"]["text/plain"] == "6")

    reply, msgs = run(kc, "import time\nprint('first')\ntime.sleep(1.5)\nprint('second')")
    arrivals = [t for k, c, t in msgs if k == "stream"]
    done = max(t for _, _, t in msgs)
    check("stream arrives while the cell runs", len(arrivals) >= 2
          and done - arrivals[0] > 1.0, (arrivals, done))

    c = kc.complete("pri", 3, reply=True, timeout=TIMEOUT)["content"]
    check("complete builtin", "print" in c["matches"] and c["cursor_start"] == 0
          and c["cursor_end"] == 3, c)
    run(kc, "class Net:\n    def forward(self, x):\n        return x\nnet = Net()")
    c = kc.complete("y = net.for", 11, reply=True, timeout=TIMEOUT)["content"]
    check("complete attribute", c["matches"] == ["forward"] and c["cursor_start"] == 8, c)

    run(kc, "def lerp(a, b, t=0.5):\n    'Mixes a and b.'\n    return a + (b - a) * t")
    i = kc.inspect("lerp(", 2, reply=True, timeout=TIMEOUT)["content"]
    t = i["data"].get("text/plain", "")
    check("inspect", i["found"] and "lerp(a, b, t=0.5)" in t and "Mixes a and b." in t, i)
    i = kc.inspect("nothing_here", 3, reply=True, timeout=TIMEOUT)["content"]
    check("inspect unknown", not i["found"], i)

    kc.is_complete("if x:")
    r = kc.get_shell_msg(timeout=TIMEOUT)["content"]
    check("is_complete incomplete", r["status"] == "incomplete" and r["indent"] == "    ", r)
    kc.is_complete("x = 1")
    r = kc.get_shell_msg(timeout=TIMEOUT)["content"]
    check("is_complete complete", r["status"] == "complete", r)

    # interrupt by SIGINT (the kernelspec's interrupt_mode)
    msg_id = kc.execute("n = 0\nwhile True:\n    n += 1")
    time.sleep(1.0)
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=TIMEOUT)
    check("interrupt (SIGINT)", reply["parent_header"]["msg_id"] == msg_id
          and reply["content"]["status"] == "error"
          and reply["content"]["ename"] == "KeyboardInterrupt", reply["content"])
    reply, msgs = run(kc, "n > 0 and x == 5")
    check("state kept after interrupt", of(msgs, "execute_result")[0]["data"]["text/plain"] == "True")

    # interrupt by an interrupt_request on the control channel
    msg_id = kc.execute("while True:\n    pass")
    time.sleep(1.0)
    req = kc.session.msg("interrupt_request", {})
    kc.control_channel.send(req)
    ctl = kc.control_channel.get_msg(timeout=TIMEOUT)
    reply = kc.get_shell_msg(timeout=TIMEOUT)
    check("interrupt (control)", ctl["msg_type"] == "interrupt_reply"
          and reply["content"]["ename"] == "KeyboardInterrupt", (ctl, reply["content"]))

    # a plot shown inline: image/png of matplotlib's default 640x480
    reply, msgs = run(kc, "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('loss')\nplt.show()")
    d = of(msgs, "display_data")
    png = base64.b64decode(d[0]["data"]["image/png"]) if d else b""
    w, h = struct.unpack(">II", png[16:24]) if len(png) > 24 else (0, 0)
    check("inline png", reply["status"] == "ok" and len(d) == 1 and png[:8] == b"\x89PNG\r\n\x1a\n"
          and (w, h) == (640, 480) and d[0]["data"]["text/plain"] == "<Figure size 640x480 with 1 Axes>",
          (reply, [t for t, _, _ in msgs], (w, h)))

    reply, msgs = run(kc, "class Card:\n    def _repr_html_(self):\n        return '<b>card</b>'\ndisplay(Card())\nCard()")
    d, r = of(msgs, "display_data"), of(msgs, "execute_result")
    check("display and rich result", len(d) == 1 and d[0]["data"]["text/html"] == "<b>card</b>"
          and r[0]["data"]["text/html"] == "<b>card</b>", msgs)

    # a message with a bad signature is rejected; the kernel keeps serving
    sock = ctx.socket(zmq.DEALER)
    sock.connect(f"{km.transport}://{km.ip}:{km.shell_port}")
    sock.send_multipart([b"<IDS|MSG>", b"0" * 64, b'{"msg_type": "execute_request", "msg_id": "x"}',
                         b"{}", b"{}", b'{"code": "x = 999"}'])
    sock.send_multipart([b"garbage"])
    time.sleep(0.5)
    sock.close()
    reply, msgs = run(kc, "x")
    check("bad messages rejected", of(msgs, "execute_result")[0]["data"]["text/plain"] == "5", msgs)
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=False)
check("shutdown", not km.is_alive())
print("ALL OK", flush=True)
