"""The broker: request handlers over the store, client bookkeeping, long polling, registration.

A request's path: ``rocketq.remoting`` dispatches by code to a handler in ``send``, ``pull``,
``queries``, ``clienthandlers`` or ``adminops``; the handler validates the header, talks to the store
and the metadata managers (``topics``, ``groups``, ``offsets``, ``clienttable``) and answers.
``server`` wires them together and owns every background task.
"""
