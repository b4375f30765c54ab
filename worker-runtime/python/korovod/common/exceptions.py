"""The exceptions Horovod users catch, with Horovod's names and hierarchy."""


class HorovodInternalError(RuntimeError):
    """A collective failed inside the runtime: a peer was lost, the job shut down or timed out.

    Elastic training treats it as recoverable (reset and restore the last commit).
    """


class HostsUpdatedInterrupt(RuntimeError):
    """The set of hosts changed; elastic training resets without restoring the last commit."""

    def __init__(self, skip_sync: bool):
        super().__init__(skip_sync)
        self.skip_sync = skip_sync
