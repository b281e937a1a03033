"""Pure rendering: a parsed RocketMQCluster in, Kubernetes objects (plain dicts) out.

Nothing here talks to the API server or reads the clock; the same input always renders the
same objects, so tests assert on exact dicts and the reconciler can compare a rendered object
with the one it applied last. Modules: ``common`` (labels, owner references, hashes, security
contexts shared by every pod), ``namesrv`` (StatefulSet, headless Service), ``brokerconf``
(broker.conf text), ``broker`` (ConfigMap, StatefulSet, headless Service per group) and
``pdb`` (PodDisruptionBudgets).
"""
