"""RocketMQ's remoting protocol: frames, codes, headers, stored-message codec and message ids.

Everything here is pure: bytes in, values out, and back. No sockets, no files, no clocks.
"""
