# SPDX-License-Identifier: MIT
"""A pipeline of stages over torch.distributed, each boundary compressed
both ways with pipezip frames: one process per stage (torchrun
--nproc-per-node S), each holding an nn.Module.

    import torch.distributed as dist
    from pipezip.pipeline import Stage
    dist.init_process_group("gloo")                 # torchrun sets the rendezvous
    stage = Stage(my_part, fwd="q4:per=token", bwd="q8", micro_batches=4, schedule="1f1b")
    loss = stage.train_step(inputs=x if stage.first else None, targets=y if stage.last else None,
                            loss_fn=torch.nn.functional.cross_entropy)
    optimizer.step()                                # each stage its own parameters

Stage r receives its input from stage r-1 as frames of fwd (boundary r) and
sends its input's gradient back as frames of bwd; it sends its output to
stage r+1 and receives that output's gradient. Micro-batches run in GPipe
order (every forward, then every backward) or 1F1B (S - r - 1 forwards to
fill the pipe, then one forward and one backward in turn); sends never
block (isend), receives do, so neither schedule can deadlock.

Per boundary and direction a codec spec ("q4", or a list with one spec per
boundary); each end keeps its own codec state (ef, ef21, aqsgd), in
state_dict() for checkpoints. evaluate() runs the base codecs and leaves
that state alone. stats() is what this stage sent and received;
boundary_stats() gathers every boundary's (a collective: every rank calls
it).
"""
import torch
import torch.distributed as dist

from . import Codec, schedules, schedule_order as _order
from .distributed import Link, _Counter, _Side, _count, _mismatch, _seconds, isend, recv

__all__ = ["Stage", "SCHEDULES", "schedule_order"]



def _steps_alone(name):
    try:
        _order(name, 0, 2, 2)
        return True
    except ValueError:
        return False


# the library's schedules whose step runs alone ("gpipe", "1f1b", ...; not
# "async", whose micro-batches go on into the next step)
SCHEDULES = tuple(s for s in schedules() if _steps_alone(s))


def schedule_order(schedule, rank, stages, micro_batches):
    """The stage's operations in order: [("F", m) | ("B", m), ...], the
    library's own order (pz_pipe_schedule_order), as pipezip train runs it."""
    return _order(schedule, rank, stages, micro_batches)


def _per_boundary(spec, boundaries, what):
    if isinstance(spec, str):
        return [spec] * boundaries
    spec = list(spec)
    if len(spec) != boundaries:
        raise ValueError(f"pipezip: {what} names {len(spec)} codecs for {boundaries} boundaries")
    return spec


def _split(t, M, what):
    if t is None:
        raise ValueError(f"pipezip: this stage needs {what}")
    if t.shape[0] % M:
        raise ValueError(f"pipezip: a batch of {t.shape[0]} does not split into {M} micro-batches")
    return list(torch.chunk(t, M))


class Stage:
    """One stage of a compressed pipeline (see the module's help).

    module: this stage's part of the model. Its forward takes the previous
    stage's output (the inputs on the first stage) and returns one tensor.
    fwd, bwd: codec specs, one for every boundary or a list per boundary.
    micro_batches, schedule: "gpipe" or "1f1b". group: the process group
    (default: the world), stage r = rank r. seed: the codecs' seed.
    tap(kind, boundary, micro_batch, tensor, frame), when given, sees every
    frame this stage sends: kind "fwd", "bwd", "eval" or "plain".
    link_bandwidth ("200mbit", bits/s) and link_latency ("50ms", s):
    every link emulated (pipezip.torch.Link); link_model "duplex" (each
    direction on its own) or "shared" (ProtocolNanoGPT's meter: one inbound
    wire per stage for both directions, stop and wait); the stages must
    share a clock (one machine). waited() is the time this stage spent
    waiting for frames still on the wire.
    """

    _STATE_VERSION = 1

    def __init__(self, module, fwd="q4", bwd="q8", micro_batches=1, schedule="1f1b", group=None, seed=None,
                 max_samples=None, tap=None, link_bandwidth=None, link_latency=0.0, link_model="duplex"):
        if not dist.is_initialized():
            raise RuntimeError("pipezip: torch.distributed is not initialised (dist.init_process_group first)")
        if schedule not in SCHEDULES:
            if schedule in schedules():
                _order(schedule, 0, 2, 2)  # raises the library's reason
            raise ValueError(f"pipezip: unknown schedule '{schedule}' (expected {' or '.join(SCHEDULES)})")
        if micro_batches < 1:
            raise ValueError(f"pipezip: {micro_batches} micro-batches")
        self.module, self.group = module, group
        self.rank, self.stages = dist.get_rank(group), dist.get_world_size(group)
        self.first, self.last = self.rank == 0, self.rank == self.stages - 1
        self.micro_batches, self.schedule = micro_batches, schedule
        B = self.stages - 1
        self.fwd_specs = _per_boundary(fwd, B, "fwd")
        self.bwd_specs = _per_boundary(bwd, B, "bwd")
        mk = lambda s: Codec(s, seed=seed, max_samples=max_samples)  # noqa: E731
        # boundary b (1-based) lies between stages b-1 and b
        self.codecs = {}
        if not self.first:
            b = self.rank
            f, g = self.fwd_specs[b - 1], self.bwd_specs[b - 1]
            self.codecs["in_fwd_rx"], self.codecs["in_bwd_tx"] = mk(f), mk(g)
            self.codecs["in_eval_rx"] = self.codecs["in_fwd_rx"].base(seed=seed, max_samples=max_samples)
            self.codecs["in_plain_rx"] = mk("none")
        if not self.last:
            b = self.rank + 1
            f, g = self.fwd_specs[b - 1], self.bwd_specs[b - 1]
            self.codecs["out_fwd_tx"], self.codecs["out_bwd_rx"] = mk(f), mk(g)
            self.codecs["out_eval_tx"] = self.codecs["out_fwd_tx"].base(seed=seed, max_samples=max_samples)
            self.codecs["out_plain_tx"] = mk("none")
        # what crossed this stage's boundaries, as this stage saw it
        self.inbound, self.outbound = _Counter(), _Counter()
        self.steps = 0
        self.tap = tap
        emulate = self.links_emulated = link_bandwidth is not None or _seconds(link_latency) > 0
        # sender ends (each direction's own queue) and the receiving waits
        if link_model not in Link.MODELS:
            raise ValueError(f"pipezip: link_model '{link_model}' (expected duplex or shared)")
        self._link_fwd = Link(link_bandwidth, link_latency, model=link_model) if emulate else None
        self._link_bwd = Link(link_bandwidth, link_latency, model=link_model) if emulate else None
        # one receiving end for both directions: under "shared" it bills the stage's one inbound wire
        self._link_rx = Link(link_bandwidth, link_latency, model=link_model) if emulate else None

    # -- the schedule -----------------------------------------------------
    def _peer(self, r):
        return r if self.group is None else dist.get_global_rank(self.group, r)

    def _forward(self, m, x_in, ids, kind):
        """micro-batch m's forward (kind: "fwd" training, "eval" through the
        base codecs, "plain" uncompressed): receive (or take) the input, run
        the module, send the output"""
        training = kind == "fwd"
        if self.first:
            x = x_in[m]
        else:
            x, n = recv(self._peer(self.rank - 1), self.codecs["in_" + kind + "_rx"], group=self.group, like=self._like,
                        link=self._link_rx)
            _count(self.inbound, "fwd" if training else "eval", x, x, n, False)
            if training:
                x.requires_grad_(True)
        y = self.module(x)
        if not self.last:
            h = isend(y, self._peer(self.rank + 1), self.codecs["out_" + kind + "_tx"], group=self.group,
                      ids=None if ids is None else ids[m], link=self._link_fwd)
            self._pending.append(h)
            _count(self.outbound, "fwd" if training else "eval", y, y, h.bytes, False)
            if self.tap is not None:
                self.tap(kind, self.rank + 1, m, y, h.frame)
        return x, y

    def _backward(self, m, saved, losses, ids):
        x, y = saved.pop(m)
        if self.last:
            losses[m].backward()
        else:
            g, n = recv(self._peer(self.rank + 1), self.codecs["out_bwd_rx"], group=self.group, like=y, link=self._link_rx)
            _count(self.outbound, "bwd", g, g, n, False)
            y.backward(g.reshape(y.shape))
        if not self.first:
            h = isend(x.grad, self._peer(self.rank - 1), self.codecs["in_bwd_tx"], group=self.group,
                      ids=None if ids is None else ids[m], link=self._link_bwd)
            self._pending.append(h)
            _count(self.inbound, "bwd", x.grad, x.grad, h.bytes, False)
            if self.tap is not None:
                self.tap("bwd", self.rank, m, x.grad, h.frame)

    def train_step(self, inputs=None, targets=None, loss_fn=None, ids=None, like=None):
        """One step over the batch in micro-batches: forwards and backwards
        in the schedule's order, gradients accumulated in the module (zero
        them and step the optimizer yourself). inputs: the first stage's
        batch; targets and loss_fn(output, target): the last stage's; ids:
        sample ids (aqsgd), on every stage. like: a tensor whose device and
        dtype received activations take (default: the module's first
        parameter's). Returns the batch's mean loss on the last stage, None
        elsewhere."""
        M = self.micro_batches
        x_in = _split(inputs, M, "inputs") if self.first else None
        t_in = _split(targets, M, "targets") if self.last else None
        if self.last and loss_fn is None:
            raise ValueError("pipezip: the last stage needs loss_fn")
        ids_m = None if ids is None else list(torch.chunk(torch.as_tensor(ids), M))
        self._like = like if like is not None else self._param_like()
        self._pending, saved, losses = [], {}, {}
        total = 0.0
        for op, m in schedule_order(self.schedule, self.rank, self.stages, M):
            if op == "F":
                x, y = self._forward(m, x_in, ids_m, "fwd")
                saved[m] = (x, y)
                if self.last:
                    losses[m] = loss_fn(y, t_in[m]) / M
                    total += float(losses[m].detach())
            else:
                self._backward(m, saved, losses, ids_m)
        for h in self._pending:
            h.wait()
        self._pending = []
        self.steps += 1
        return total if self.last else None

    @torch.no_grad()
    def evaluate(self, inputs=None, targets=None, loss_fn=None, like=None, plain=False):
        """A forward over the batch through the boundaries' base codecs (no
        state moves, counted as evaluation), or uncompressed with
        plain=True: the last stage's loss_fn (mean over micro-batches) or
        its outputs when loss_fn is None; None elsewhere."""
        M = self.micro_batches
        x_in = _split(inputs, M, "inputs") if self.first else None
        t_in = _split(targets, M, "targets") if self.last and loss_fn is not None else None
        self._like = like if like is not None else self._param_like()
        self._pending, outs = [], []
        for m in range(M):
            _, y = self._forward(m, x_in, None, "plain" if plain else "eval")
            if self.last:
                outs.append(float(loss_fn(y, t_in[m])) if loss_fn is not None else y)
        for h in self._pending:
            h.wait()
        self._pending = []
        if not self.last:
            return None
        return sum(outs) / M if loss_fn is not None else torch.cat(outs)

    def waited(self):
        """seconds this stage waited for frames on emulated links"""
        return self._link_rx.waited if self._link_rx is not None else 0.0

    def _param_like(self):
        for p in self.module.parameters():
            return p
        return torch.empty(0)

    # -- what crossed ---------------------------------------------------------
    def stats(self):
        """This stage's view: {"in": {...boundary rank...}, "out": {...}}"""
        out = {}
        for name, c, b in (("in", self.inbound, self.rank), ("out", self.outbound, self.rank + 1)):
            if (name == "in" and self.first) or (name == "out" and self.last):
                continue
            d = {"boundary": b, "fwd": self.fwd_specs[b - 1], "bwd": self.bwd_specs[b - 1]}
            for side in _Counter.SIDES:
                s = getattr(c, side)
                d[side + "_bytes"], d[side + "_frames"], d[side + "_elements"] = s.bytes, s.frames, s.elements
                d[side + "_fp32_bytes"] = 4 * s.elements
                d[side + "_ratio"] = 4.0 * s.elements / s.bytes if s.bytes else None
            out[name] = d
        return out

    def boundary_stats(self):
        """Every boundary's traffic (a collective: every stage calls it):
        a list, boundary 1 first, of the sending stage's counts."""
        mine = self.stats()
        every = [None] * self.stages
        dist.all_gather_object(every, mine, group=self.group)
        rows = []
        for b in range(1, self.stages):
            up, down = every[b - 1]["out"], every[b]["in"]
            row = {"boundary": b, "fwd": up["fwd"], "bwd": up["bwd"]}
            for side, src in (("fwd", up), ("bwd", down), ("eval", up)):  # counted where it was sent
                for k in ("bytes", "frames", "elements", "fp32_bytes", "ratio"):
                    row[f"{side}_{k}"] = src[f"{side}_{k}"]
            rows.append(row)
        return rows

    # -- checkpoints ------------------------------------------------------------
    def state_dict(self):
        """The codecs' state and the counters (the module's and optimizer's
        state are the caller's: save them beside it)."""
        return {"version": self._STATE_VERSION, "rank": self.rank, "stages": self.stages,
                "fwd": self.fwd_specs, "bwd": self.bwd_specs, "steps": self.steps,
                "codecs": {k: c.state() for k, c in self.codecs.items()},
                "counters": {name: {s: getattr(c, s).as_dict() for s in _Counter.SIDES}
                             for name, c in (("in", self.inbound), ("out", self.outbound))}}

    def load_state_dict(self, state):
        if not isinstance(state, dict) or state.get("version") != self._STATE_VERSION:
            raise _mismatch("pipezip: not a Stage.state_dict()")
        mine = {"rank": self.rank, "stages": self.stages, "fwd": self.fwd_specs, "bwd": self.bwd_specs}
        for k, v in mine.items():
            if state[k] != v:
                raise _mismatch(f"pipezip: the saved stage's {k} is {state[k]!r}, this one's is {v!r}")
        for k, c in self.codecs.items():
            c.load_state(state["codecs"][k])
        for name, c in (("in", self.inbound), ("out", self.outbound)):
            for s in _Counter.SIDES:
                setattr(c, s, _Side.from_dict(state["counters"][name][s]))
        self.steps = state["steps"]

