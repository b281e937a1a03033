"""Message filters: RocketMQ SQL92 selectors (sql92) and Java value semantics (javavalues)."""
