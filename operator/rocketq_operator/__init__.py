"""The rocketq Kubernetes operator (kopf): RocketMQCluster, RocketMQTopic, RocketMQConsumerGroup."""
