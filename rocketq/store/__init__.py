"""The broker's message store: CommitLog, ConsumeQueues, IndexFiles, flushing, recovery, retention.

``messagestore.MessageStore`` is the entry point; ``results`` holds the values it exchanges and
``settings.StoreSettings`` its configuration. See docs/store.md.
"""
