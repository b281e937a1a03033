"""DLedger (Raft) broker groups.

A DLedger group is 3 (or 5) brokers with one ``dLegerGroup`` that elect a leader among
themselves and replicate every CommitLog append to a majority before it counts. ``contract``
holds the two seams between the Raft algorithm and the broker: the log Raft replicates
(:class:`~rocketq.dledger.contract.RaftLog`, backed by the broker's CommitLog) and the node the
broker drives (:class:`~rocketq.dledger.contract.RaftMember`).
"""
