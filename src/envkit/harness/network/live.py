"""The live part of the network stage: the nodes meet on the job's rendezvous port, as torchrun's will.

The parent (:func:`run_live`) starts one child per node (``python -c BOOTSTRAP``, as the loader check does)
and kills its whole process group at the deadline: a TCPStore client facing a port some other program holds
waits past its own timeout (torch 2.13, measured), so only a kill bounds it. The child (:func:`child_main`)
writes one JSON event per line to a pipe, and the parent names the cause from the last one it read:

1. ``probe``: a node that does not host the store connects to ``MASTER_ADDR:MASTER_PORT`` first with a plain
   socket, so "refused", "no route" and "dropped" (a firewall's DROP: the connection times out) are told apart;
2. ``store``: torch's ``TCPStore`` (the master hosts it, as the job's agent will), every node then takes a rank
   (its own index where the launcher gave one, else the next free one) and publishes its facts: host, rank,
   addresses, torch/CUDA/NCCL/driver versions, job id and its own static verdict;
3. ``arrive``: every node waits for the others, so a node that never comes is named by rank (and by host
   where the nodes' names are known);
4. ``gloo``: a gloo group over the same store, with the time left as its timeout, and a timed all_reduce
   (its bus bandwidth, as nccl-tests counts it: ``2 (n - 1) / n x bytes / s``); on GPUs the same with NCCL.
   Where one node fails, it leaves its reason in the store, and the others stop waiting and name it.

Example:
    >>> bus_bandwidth(4 << 20, 2, 0.004)  # 4 MiB among 2 nodes in 4 ms
    1.048576
"""

from __future__ import annotations

import errno
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from datetime import timedelta
from typing import Any, TypedDict

from ..checks.loader import _PACKAGE, kill_and_reap
from ..checks.loader_child import BOOTSTRAP, die_with_parent
from ..text import peer_text
from .compare import Peer, compare_peers
from .nccllog import Transport, classify_lines, read_log

PREFIX = "envkit-network/"
ALLREDUCE_BYTES = 4 << 20  # large enough to time, small enough for any link in well under a second
ITERATIONS = 5
PAYLOAD_MAX = 16 * 1024  # bytes of one node's facts in the store: anything larger is not envkit's
EVENT_MAX = 1 << 20  # one event line (the peers of a large job); the pipe as a whole is read up to EVENTS_MAX
EVENTS_MAX = 8 << 20
MESSAGE_MAX = 4000  # a failure's message, cut in the child before it is sent
PROBE_TRY_S = 2.0  # one connection attempt: a DROP shows as a timeout, a REJECT at once
GLOO_RESERVE_S = 6.0  # of the bound, kept for the group and its all_reduce once every node has arrived
POLL_S = 0.1
LINGER_S = 3.0  # after a failure, how long the master's store stays up for the others to read why


class LiveResult(TypedDict):
    """what the child reported, or where it was when the deadline ended it"""

    phase: str
    rank: int | None
    hosted: bool | None  # whether this node's child hosted the rendezvous store
    peers: list[Peer]
    missing: list[int]
    probe: str | None
    error: str | None
    cause: str | None
    blamed: list[int]
    bandwidth_gbps: float | None
    nccl_bandwidth_gbps: float | None
    transport: Transport | None
    killed: bool
    elapsed_s: float


def bus_bandwidth(nbytes: int, nodes: int, seconds: float) -> float:
    """All-reduce bus bandwidth in GB/s (nccl-tests' ``busbw``: algorithm bandwidth x 2 (n - 1) / n)."""
    if seconds <= 0 or nodes < 2:
        return 0.0
    return round(nbytes / seconds * 2 * (nodes - 1) / nodes / 1e9, 6)


def _new_result() -> LiveResult:
    return {"phase": "start", "rank": None, "hosted": None, "peers": [], "missing": [], "probe": None, "error": None, "cause": None,
            "blamed": [], "bandwidth_gbps": None, "nccl_bandwidth_gbps": None, "transport": None, "killed": False,
            "elapsed_s": 0.0}


def run_live(config: dict[str, Any], *, deadline_s: float, nccl: bool) -> LiveResult:
    """Run the child with ``config`` (``master_addr``, ``master_port``, ``nodes``, ``rank`` or None, ``hosts``,
    ``is_master``, ``payload``) and return its :class:`LiveResult` within ``deadline_s`` seconds."""
    start = time.monotonic()
    out = _new_result()
    try:
        logdir = tempfile.mkdtemp(prefix="envkit-nccl-")
    except OSError as exc:  # a full or read-only TMPDIR: a finding, not a traceback
        out["cause"], out["error"] = "error", f"could not make the network child's folder in {tempfile.gettempdir()}: {exc}"
        return out
    rfd, wfd = os.pipe()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if nccl:  # NCCL names its transport only in its INFO lines; a file per process keeps them apart from stderr
        env.update(NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,NET",
                   NCCL_DEBUG_FILE=os.path.join(logdir, "nccl.%h.%p.log"))
    full = dict(config, sys_path=[p for p in sys.path if p], module=f"{_PACKAGE.rpartition('.')[0]}.network.live",
                fd=wfd, deadline_s=max(1.0, deadline_s - 1.0), nccl=nccl,
                parent_pid=os.getpid() if threading.current_thread() is threading.main_thread() else None)
    stderr = tempfile.TemporaryFile()
    try:
        proc = subprocess.Popen([sys.executable, "-c", BOOTSTRAP, json.dumps(full)], pass_fds=(wfd,),
                                stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr, start_new_session=True, env=env)
    except OSError as exc:
        os.close(rfd)
        out["error"] = f"could not start the network child: {exc}"
        return out
    finally:
        os.close(wfd)
    try:
        _read_events(rfd, out, start + deadline_s)
        try:  # the pipe closes as the child exits: give it the moment to be reaped
            proc.wait(timeout=max(0.05, min(2.0, start + deadline_s - time.monotonic())))
        except subprocess.TimeoutExpired:
            out["killed"] = True
        if proc.returncode not in (0, None) and out["error"] is None:  # a failure whose event never arrived
            out["cause"] = "error"
            out["error"] = f"the network child failed (exit {proc.returncode}) without saying why"
    finally:
        os.close(rfd)
        kill_and_reap(proc, proc.pid, grace=2.0)
        if out["killed"] and out["error"] is None:
            stderr.seek(0)
            out["error"] = _last_line(stderr.read()[-4000:].decode("utf-8", "replace"))
        stderr.close()
    if nccl:
        lines: list[str] = []
        for name in sorted(os.listdir(logdir))[:16]:
            lines += read_log(os.path.join(logdir, name))
        out["transport"] = classify_lines(lines) if lines else None
    for name in os.listdir(logdir):
        os.unlink(os.path.join(logdir, name))
    os.rmdir(logdir)
    out["elapsed_s"] = round(time.monotonic() - start, 3)
    return out


def _last_line(text: str) -> str | None:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("frame #")]
    return lines[-1][:300] if lines else None


def _read_events(fd: int, out: LiveResult, deadline: float) -> None:
    """Apply the child's events to ``out`` until it closes the pipe, ends, or ``deadline`` passes."""
    buf, total = b"", 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        ready, _, _ = select.select([fd], [], [], min(left, 0.5))
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return
        total += len(chunk)
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            _apply(out, line)
        if len(buf) > EVENT_MAX or total > EVENTS_MAX:
            out["error"] = "the network child wrote more than its events' bound"
            return


def _apply(out: LiveResult, line: bytes) -> None:
    try:
        event = json.loads(line)
    except ValueError:
        return
    if not isinstance(event, dict):
        return
    kind = event.get("ev")
    if kind == "phase":
        out["phase"] = str(event.get("phase"))[:40]
    elif kind in ("probe", "rank", "hosted", "peers", "missing", "bandwidth", "nccl_bandwidth"):
        key = {"probe": "probe", "rank": "rank", "hosted": "hosted", "peers": "peers", "missing": "missing", "bandwidth": "bandwidth_gbps",
               "nccl_bandwidth": "nccl_bandwidth_gbps"}[kind]
        out[key] = event.get("value")  # type: ignore[literal-required]
    elif kind == "fail":
        out["cause"] = str(event.get("cause"))[:40]
        out["error"] = str(event.get("message"))[:2000]
        out["blamed"] = [b for b in event.get("blamed", []) if isinstance(b, int)][:64]


# --- the child ---------------------------------------------------------------------------------------------


class Failed(Exception):
    """A named failure of the live part: ``cause`` is a stable word, ``blamed`` the ranks at fault."""

    def __init__(self, cause: str, message: str, blamed: list[int] | None = None):
        super().__init__(message)
        self.cause, self.blamed = cause, blamed or []


class _Events:
    def __init__(self, fd: int):
        self.fd = fd

    def __call__(self, ev: str, **fields: Any) -> None:
        data = (json.dumps({"ev": ev, **fields}, default=str)[:EVENT_MAX - 1] + "\n").encode()
        try:
            os.write(self.fd, data)
        except OSError:
            pass


def fail_event(exc: Exception) -> dict[str, Any]:
    """The ``fail`` event's fields for ``exc``, its message cut before it is serialised: a line cut after would be no
    JSON, the parent would drop it, and the stage would read the child's end as a pass.

    >>> len(fail_event(Failed("peer", "x" * 100000, [1]))["message"]) == MESSAGE_MAX
    True
    """
    if isinstance(exc, Failed):
        return {"cause": exc.cause, "message": str(exc)[:MESSAGE_MAX], "blamed": exc.blamed[:64]}
    return {"cause": "error", "message": f"{type(exc).__name__}: {_first_line(str(exc))}"[:MESSAGE_MAX], "blamed": []}


def child_main(config: dict[str, Any]) -> None:
    """The child's whole run (started by :func:`run_live`); exits with os._exit so a stuck gloo thread cannot hold it."""
    die_with_parent(config.get("parent_pid"))
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    emit = _Events(config["fd"])
    deadline = time.monotonic() + float(config["deadline_s"])
    code = 0
    try:
        _Node(config, emit, deadline).run()
    except Exception as exc:  # Failed, or torch's own errors: the message is the finding
        emit("fail", **fail_event(exc))
        if not isinstance(exc, Failed):
            traceback.print_exc()
        code = 1
    emit("phase", phase="done")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:500]


class _Node:
    """One node's part: store, rank, arrival, comparison, gloo (and NCCL) all_reduce."""

    def __init__(self, config: dict[str, Any], emit: _Events, deadline: float):
        self.c, self.emit, self.deadline = config, emit, deadline
        self.addr, self.port, self.nodes = config["master_addr"], int(config["master_port"]), int(config["nodes"])
        self.rank: int | None = None
        self.store: Any = None  # torch's TCPStore, once made

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def run(self) -> None:
        if not self.c["is_master"]:
            self.emit("phase", phase="probe")
            self._probe()
        import torch.distributed as dist  # after the probe: importing torch takes a second or two

        self.emit("phase", phase="store")
        self.store = self._store(dist)
        self.emit("hosted", value=bool(self.c["is_master"]))
        try:
            self._take_rank()
            peers = self._arrive()
            self._compare(peers)
            self.emit("phase", phase="gloo")
            self._collectives(dist, peers)
        except Failed as exc:
            if exc.cause != "peer":  # the node at fault has said it already
                self._tell(str(exc))
            self._leave(linger=LINGER_S)
            raise
        self._leave(linger=self.left())

    def _probe(self) -> None:
        """Connect with a plain socket until the master's port answers: name refused, unreachable or dropped."""
        last = None
        while self.left() > GLOO_RESERVE_S:
            try:
                with socket.create_connection((self.addr, self.port), timeout=min(PROBE_TRY_S, self.left())):
                    self.emit("probe", value="connected")
                    return
            except socket.timeout:
                last = "timeout"
            except OSError as exc:
                last = {errno.ECONNREFUSED: "refused", errno.EHOSTUNREACH: "unreachable",
                        errno.ENETUNREACH: "unreachable"}.get(exc.errno or 0, f"error: {exc.strerror or exc}")
                time.sleep(min(0.2, max(0.0, self.left())))
            self.emit("probe", value=last)
        raise Failed(f"probe-{(last or 'timeout').split(':')[0]}", _probe_message(last, self.addr, self.port,
                                                                                   self.left() + 0.0))

    def _store(self, dist):
        timeout = timedelta(seconds=max(1.0, self.left() - GLOO_RESERVE_S))
        try:
            if self.c["is_master"]:
                # the server listens on every address; the master's own client connects to MASTER_ADDR, as torchrun's
                return dist.TCPStore(self.addr, self.port, self.nodes, True, timeout=timeout, wait_for_workers=False)
            return dist.TCPStore(self.addr, self.port, self.nodes, False, timeout=timeout)
        except Exception as exc:
            text = _first_line(str(exc))
            if "EADDRINUSE" in text or "address already in use" in text:
                if self.c.get("master_guessed"):
                    # Master by address only: another node of the job on this machine may host the store
                    # already. torchrun's c10d does the same, then joins as a client
                    # (torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py, _create_tcp_store).
                    self.c = dict(self.c, is_master=False, master_guessed=False)
                    return self._store(dist)
                raise Failed("port-in-use", f"the rendezvous port {self.port} is in use on this node (the master): "
                                            "another process listens there, so the job's store cannot") from None
            if "Ping failed" in text or "invalid value" in text:
                raise Failed("store", f"{self.addr}:{self.port} answered, but not as torch's rendezvous store ({text}): "
                                      "another program holds MASTER_PORT on the master node") from None
            raise Failed("store", f"the rendezvous store at {self.addr}:{self.port} did not answer: {text}") from None

    def _take_rank(self) -> None:
        given = self.c.get("rank")
        if given is None:
            given = 0 if self.c["is_master"] else int(self.store.add(PREFIX + "next", 1))
        if not 0 <= given < self.nodes:
            raise Failed("too-many", f"{given + 1} nodes came to {self.addr}:{self.port}, more than the job's "
                                     f"{self.nodes}: another job shares this rendezvous, or the node count is wrong")
        if int(self.store.add(f"{PREFIX}claim/{given}", 1)) > 1:
            raise Failed("duplicate-rank", f"another node already took index {given} at {self.addr}:{self.port}: two "
                                           "nodes have the same node index, or another job shares this rendezvous")
        self.rank = given
        self.emit("rank", value=given)
        payload = dict(self.c["payload"], rank=given)
        self.store.set(f"{PREFIX}node/{given}", json.dumps(payload)[:PAYLOAD_MAX])

    def _arrive(self) -> list[Peer]:
        """Wait for every node's facts; name the ranks (and hosts) that never came."""
        self.emit("phase", phase="arrive")
        keys = [f"{PREFIX}node/{r}" for r in range(self.nodes)]
        said: list[int] = []
        while True:
            missing = [r for r, k in enumerate(keys) if not self.store.check([k])]
            if not missing:
                break
            if missing != said:  # each change once: a thousand-node list every tick would fill the pipe
                self.emit("missing", value=missing[:1024])
                said = missing
            self._peer_failure()
            if self.left() <= GLOO_RESERVE_S:
                raise Failed("missing", _missing_message(missing, self.nodes, self.c.get("hosts") or [], self._peers(
                    [r for r in range(self.nodes) if r not in missing]), self.left()), missing)
            time.sleep(POLL_S)
        peers = self._peers(range(self.nodes))
        self.emit("peers", value=peers)
        return peers

    def _peers(self, ranks) -> list[Peer]:
        out = []
        for r in ranks:
            raw = self.store.get(f"{PREFIX}node/{r}")[:PAYLOAD_MAX]
            try:
                peer = json.loads(raw)
            except ValueError:
                raise Failed("garbage", f"node index {r} published facts that are not envkit's ({raw[:60]!r}): "
                                        "another program uses this rendezvous", [r]) from None
            except RecursionError:
                raise Failed("garbage", f"node index {r} published facts nested too deep to be envkit's", [r]) from None
            if not isinstance(peer, dict) or not isinstance(peer.get("host"), str):
                raise Failed("garbage", f"node index {r} published facts that are not envkit's", [r])
            out.append(_clean_peer(peer, r))
        return out

    def _compare(self, peers: list[Peer]) -> None:
        """One job, one build of torch/CUDA/NCCL, and no node that failed its own checks."""
        found = compare_peers(peers, self.c["payload"]["job"])
        if found:
            raise Failed(*found)

    def _collectives(self, dist, peers: list[Peer]) -> None:
        result: dict[str, Any] = {}
        worker = threading.Thread(target=self._allreduce, args=(dist, peers, result), daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(POLL_S * 2)
            self._peer_failure()
            if self.left() <= 0:
                raise Failed("timeout", f"the gloo group did not form within the bound ({self.c['deadline_s']:g} s): "
                                        "the nodes reach the rendezvous but not each other; name the interface "
                                        "every node shares")
        if "error" in result:
            raise Failed("gloo", result["error"])

    def _allreduce(self, dist, peers: list[Peer], result: dict[str, Any]) -> None:
        try:
            import torch

            timeout = timedelta(seconds=max(1.0, self.left() - 0.5))
            store = dist.PrefixStore(PREFIX + "gloo/", self._client(dist, timeout))
            dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.nodes, timeout=timeout)
            t = torch.ones(ALLREDUCE_BYTES // 4)
            self.emit("bandwidth", value=_timed(lambda: dist.all_reduce(t), self.nodes))
            if self.c["nccl"] and all(p.get("gpus", 0) > 0 for p in peers):
                self.emit("phase", phase="nccl")
                torch.cuda.set_device(0)
                group = dist.new_group(backend="nccl", timeout=timeout)
                g = torch.ones(ALLREDUCE_BYTES // 4, device="cuda")

                def step() -> None:
                    dist.all_reduce(g, group=group)
                    torch.cuda.synchronize()
                self.emit("nccl_bandwidth", value=_timed(step, self.nodes))
            dist.destroy_process_group()
        except Exception as exc:
            result["error"] = _gloo_message(_first_line(str(exc)))

    def _client(self, dist, timeout: timedelta):
        """A second store connection for the group: the main thread keeps polling on its own."""
        return dist.TCPStore(self.addr, self.port, self.nodes, False, timeout=timeout)

    def _peer_failure(self) -> None:
        """Stop waiting when another node has left its reason in the store (by its index, or, a node that could
        not take one, under the job's abort key)."""
        if self.store.check([f"{PREFIX}abort"]):
            why = peer_text(self.store.get(f"{PREFIX}abort")[:2000].decode("utf-8", "replace"), 2000)
            raise Failed("peer", f"a node without an index failed: {why}", [])
        for r in range(self.nodes):
            if r != self.rank and self.store.check([f"{PREFIX}error/{r}"]):
                why = peer_text(self.store.get(f"{PREFIX}error/{r}")[:2000].decode("utf-8", "replace"), 2000)
                raise Failed("peer", f"node index {r} failed: {why}", [r])

    def _tell(self, why: str) -> None:
        if self.store is not None:
            host = self.c["payload"]["host"]
            key = f"{PREFIX}error/{self.rank}" if self.rank is not None else f"{PREFIX}abort"
            try:
                self.store.set(key, f"({host}) {why}"[:2000])
            except Exception:
                pass

    def _leave(self, linger: float) -> None:
        """Say this node is done; the master keeps the store up until every node has said it, at most ``linger``
        seconds (the others read a failure's reason from it)."""
        if self.store is None:
            return
        until = time.monotonic() + min(linger, self.left())
        try:
            if self.rank is not None:
                self.store.set(f"{PREFIX}done/{self.rank}", "1")
            if self.c["is_master"]:
                keys = [f"{PREFIX}done/{r}" for r in range(self.nodes)]
                while time.monotonic() < until and not all(self.store.check([k]) for k in keys):
                    time.sleep(POLL_S)
        except Exception:
            pass


def _timed(step, nodes: int) -> float:
    step()  # the first collective connects the pairs: not part of the bandwidth
    start = time.perf_counter()
    for _ in range(ITERATIONS):
        step()
    return bus_bandwidth(ALLREDUCE_BYTES, nodes, (time.perf_counter() - start) / ITERATIONS)


def _probe_message(last: str | None, addr: str, port: int, left: float) -> str:
    """Why this node never reached the master's port, by what the last connection attempt met."""
    where = f"{addr}:{port}"
    if last == "refused":
        return (f"nothing accepts connections at {where}: the master node has not started its preflight, or a "
                "firewall rejects the port")
    if last == "unreachable":
        return f"no route to {where} from this node: MASTER_ADDR is an address this node's network cannot reach"
    if last is None or last == "timeout":
        return (f"connections to {where} time out: a firewall drops the rendezvous port, or MASTER_ADDR is not "
                "the master node's address")
    return f"cannot connect to {where}: {last}"


def _missing_message(missing: list[int], nodes: int, hosts: list[str], came: list[Peer], left: float) -> str:
    """The nodes that never came, by host where the job's host list is known and tells them apart, else by index."""
    arrived = ", ".join(f"{p['host']} (index {p['rank']})" for p in came) or "none"
    absent = [h for h in hosts if h not in {p["host"] for p in came}] if len(hosts) == nodes else []
    who = (f"node(s) {', '.join(absent)}" if len(absent) == len(missing)
           else f"node index(es) {', '.join(map(str, missing))}")
    return (f"{len(missing)} of {nodes} nodes never arrived at the rendezvous ({who}; arrived: {arrived}): they did "
            "not start their preflight, or cannot reach the master's port")


def _gloo_message(text: str) -> str:
    """gloo's own words, with what they mean for this job."""
    if "Unable to find address for" in text:
        return (f"{text}: GLOO_SOCKET_IFNAME names an interface this node lacks")
    if "Connection refused" in text and ("127.0." in text or "::1" in text):
        return (f"{text}: a node advertised a loopback address (its host name resolves to 127.x), so the others "
                "cannot connect to it")
    return text


_PEER_TEXT = ("host", "address", "interface", "job", "verdict", "problem", "remedy")


def _clean_peer(peer: dict, rank: int) -> Peer:
    """A peer's facts as this node prints and compares them: each text cut and its unprintable characters escaped
    (a newline in a host name cannot forge a log line), the numbers numbers, the versions a flat text map."""
    given = peer.get("versions")
    versions: dict = given if isinstance(given, dict) else {}
    gpus = peer.get("gpus")
    out: dict[str, Any] = {k: peer_text(peer[k], 500 if k in ("problem", "remedy") else 200)
                           if peer.get(k) is not None else None for k in _PEER_TEXT}
    out.update(rank=rank, gpus=gpus if isinstance(gpus, int) and not isinstance(gpus, bool) and 0 <= gpus < 4096 else 0,
               versions={peer_text(k, 40): peer_text(v, 80) for k, v in list(versions.items())[:16] if v is not None})
    out["verdict"] = out["verdict"] or "pass"
    return out  # type: ignore[return-value]
