"""A CERAR transport over torch.distributed: each exchange is isend to rank+1 and irecv from
rank-1 on a dedicated gloo group (so CERAR's messages never interleave with DDP's own
collectives). The engine calls start/wait/check_agreement from C++ (cerar._cerar, with the GIL
taken for each call); buffers are raw host addresses owned by the engine, wrapped without a copy.
"""
import ctypes
import datetime

import torch
import torch.distributed as dist

from . import _cerar

_TAG = 0x0CEA
_NO_LIMIT_S = 1e9


def _wrap(address, nbytes):
    """A uint8 tensor over `nbytes` at `address` (no copy; the engine keeps the memory alive
    until the exchange is waited for)."""
    return torch.frombuffer((ctypes.c_ubyte * nbytes).from_address(address), dtype=torch.uint8)


class TorchTransport:
    def __init__(self, group=None, timeout_s=60.0):
        if not dist.is_initialized():
            raise RuntimeError("torch.distributed is not initialised (init_process_group or torchrun)")
        # torch keeps timeouts as integer milliseconds: inf (and anything past ~30 years) is
        # "no limit" in practice.
        self.timeout = datetime.timedelta(seconds=min(timeout_s, _NO_LIMIT_S))
        if group is dist.GroupMember.NON_GROUP_MEMBER:
            # What new_group gave a rank outside the group: its ranks are unknown here (torch
            # said "rank -1 of -1" further on). new_group is collective over the job, so take
            # part - with ranks that leave this one out, which is all a non-member's call
            # decides - and the members do not wait for it; then refuse.
            me, world = dist.get_rank(), dist.get_world_size()
            dist.new_group(ranks=[r for r in range(world) if r != me], backend="gloo",
                           timeout=self.timeout)
            raise _cerar.InvalidArgument(
                "torch communicator: this rank (global rank %d of %d) is not a member of the "
                "group; every rank of the job calls torch_communicator(group) (it creates a "
                "process group), and on the group's other ranks it raises this" % (me, world))
        ranks = list(range(dist.get_world_size())) if group is None else \
            dist.get_process_group_ranks(group)
        # new_group is collective over the world: every rank of the job must call this.
        self.group = dist.new_group(ranks=ranks, backend="gloo", timeout=self.timeout)
        self.rank = dist.get_rank(self.group)
        self.size = dist.get_world_size(self.group)
        self._ranks = ranks
        self.next = ranks[(self.rank + 1) % self.size]
        self.prev = ranks[(self.rank - 1) % self.size]

    def start(self, send_address, recv_address, nbytes):
        if nbytes == 0:
            return None
        recv = dist.irecv(_wrap(recv_address, nbytes), src=self.prev, group=self.group, tag=_TAG)
        send = dist.isend(_wrap(send_address, nbytes), dst=self.next, group=self.group, tag=_TAG)
        return recv, send

    def wait(self, token):
        if token is None:
            return
        for work in token:
            work.wait(self.timeout)

    def check_agreement(self, what, value):
        mine = torch.tensor([value], dtype=torch.int64) if value < (1 << 63) else \
            torch.tensor([value - (1 << 64)], dtype=torch.int64)
        everyone = [torch.zeros(1, dtype=torch.int64) for _ in range(self.size)]
        dist.all_gather(everyone, mine, group=self.group)
        values = [int(v.item()) % (1 << 64) for v in everyone]
        for r, v in enumerate(values):
            if v != values[0]:
                raise RuntimeError("ranks disagree on %s: rank 0 has %d, rank %d has %d (seen by "
                                   "rank %d)" % (what, values[0], r, v, self.rank))
