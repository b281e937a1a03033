"""Asyncio transport for RocketMQ remoting frames: connections, a server and a client.

Layering: ``connection`` moves frames over one TCP connection in both directions (requests out,
responses matched by opaque, requests in dispatched to handlers); ``server`` accepts
connections; ``client`` keeps one connection per peer address. Nothing here knows what a
request means: the name server and broker hand in a table from request code to handler.
"""
