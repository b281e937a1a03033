"""The RocketMQ 5 gRPC endpoint (apache.rocketmq.v2 MessagingService): docs/proxy.md.

``proto/`` holds apache/rocketmq-apis' protocol files, ``v2/`` the stubs generated from them
(``make proto``); the endpoint translates each v2 call into rocketq's remoting requests.
"""
