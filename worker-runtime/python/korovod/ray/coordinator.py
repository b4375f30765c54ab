"""A korovod.ray job's settings (MiniSettings) and its Coordinator: ranks by Ray node, the
local and cross ranks that follow, and the job's rendezvous store, hosted in this process."""

from __future__ import annotations

import dataclasses
import secrets
from collections import defaultdict
from typing import Dict, List, Optional

import ray

from korovod.common.rendezvous import RendezvousServer


@dataclasses.dataclass
class MiniSettings:
    """What a korovod.ray job needs to know (RayExecutor.create_settings makes one).

    key: the job secret every rank proves at the rendezvous; the default is a fresh random one
      per settings object. timeout_s: seconds every rank has to reach the rendezvous once one
      called hvd.init() (KOROVOD_START_TIMEOUT). placement_group_timeout_s: seconds to wait for
      Ray to reserve the job's resources. nics: network interfaces for the ranks' sockets (the
      first, sorted, is used: KOROVOD_IFACE). ssh_port, ssh_identity_file: unused (no ssh).
    """

    nics: Optional[set] = None
    verbose: int = 1
    key: Optional[str] = dataclasses.field(default_factory=lambda: secrets.token_hex(32))
    ssh_port: Optional[int] = None
    ssh_identity_file: Optional[str] = None
    timeout_s: int = 300
    placement_group_timeout_s: int = 100
    elastic: bool = False


def _job_secret(settings) -> str:
    key = getattr(settings, "key", None)
    if isinstance(key, (bytes, bytearray)):
        key = key.hex()
    return key if isinstance(key, str) and len(key) >= 16 else secrets.token_hex(32)


class Coordinator:
    """The job's ranks by Ray node, the local and cross ranks that follow, and the rendezvous."""

    def __init__(self, settings) -> None:
        self.settings = settings
        self.node_id_by_rank: Dict[str, List[int]] = defaultdict(list)
        self._hostnames: set = set()
        self.rendezvous: Optional[RendezvousServer] = None
        self.global_rendezv_port: Optional[int] = None

    @property
    def world_size(self) -> int:
        return sum(len(ranks) for ranks in self.node_id_by_rank.values())

    @property
    def hostnames(self) -> set:
        return self._hostnames

    @property
    def node_id_string(self) -> str:
        """"node:ranks,..." in registration order."""
        return ",".join(f"{node}:{len(ranks)}" for node, ranks in self.node_id_by_rank.items())

    def register(self, hostname: str, node_id: str, world_rank: int) -> None:
        self._hostnames.add(hostname)
        self.node_id_by_rank[node_id].append(world_rank)

    def finalize_registration(self) -> Dict[int, Dict[str, int]]:
        """{world rank: HOROVOD_LOCAL_RANK/_SIZE, HOROVOD_CROSS_RANK/_SIZE}: a node is a host; the
        cross rank of local rank l is the index of its node among the nodes that have an l."""
        nodes = list(self.node_id_by_rank.values())
        info = {}
        for node_index, ranks in enumerate(nodes):
            for local_rank, rank in enumerate(ranks):
                with_slot = [i for i, other in enumerate(nodes) if len(other) > local_rank]
                info[rank] = {"HOROVOD_LOCAL_RANK": local_rank, "HOROVOD_LOCAL_SIZE": len(ranks),
                              "HOROVOD_CROSS_RANK": with_slot.index(node_index), "HOROVOD_CROSS_SIZE": len(with_slot)}
        return info

    def establish_rendezvous(self) -> Dict[str, str]:
        """Starts the job's rendezvous store in this process; returns what every rank's
        environment needs besides its rank."""
        self.stop_rendezvous()
        address = ray.util.get_node_ip_address()
        self.rendezvous = RendezvousServer(listen_host="0.0.0.0", address=address,
                                           job_secret=_job_secret(self.settings))
        self.global_rendezv_port = self.rendezvous.start()
        env = self.rendezvous.rank_env(0, max(self.world_size, 1))
        del env["KOROVOD_RANK"]  # each actor has its own, from its constructor
        env["KOROVOD_START_TIMEOUT"] = str(getattr(self.settings, "timeout_s", 300))
        nics = getattr(self.settings, "nics", None)
        if nics:
            env["KOROVOD_IFACE"] = sorted(nics)[0]
        return env

    def stop_rendezvous(self) -> None:
        if self.rendezvous is not None:
            self.rendezvous.stop()
        self.rendezvous = None
