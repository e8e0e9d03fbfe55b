"""What the three stream loops (``chat``, ``messages``, ``responses``) share.

Each relays one upstream stream after another as one answer; the client's
reply must close whichever of them is open, and a later round's blocks or
items are numbered on from those the client already has.
"""

from routing.protocols.base import StreamReply


class Open:
    """The HTTP response of whichever round is being read, closed with the reply."""

    def __init__(self, response):
        self.response = response

    def close(self):
        self.response.close()


def looped(open_stream, request, recalls, relayed) -> StreamReply:
    """The first round opened (a failure here is the attempt's: it may be retried), and the
    reply whose events ``relayed(open_stream, request, recalls, reply, current)`` makes."""
    reply = open_stream(request)
    current = Open(reply.response)
    return StreamReply(current, relayed(open_stream, request, recalls, reply, current))


def numbered(event, key: str, index: int):
    """``event`` with its ``key`` (a block's or an item's index) set to ``index``."""
    if event.data.get(key) != index:
        event.data[key] = index
        event.changed()
    return event


class Numbering:
    """A Messages or Responses round's blocks (items): relayed numbered on from the client's,
    or, for a tool call, held to the round's end. ``key``: the field that numbers them."""

    key = ""

    def __init__(self, shown: int):
        self.shown = shown  # blocks the client has, from earlier rounds and this one
        self.index: dict = {}  # upstream index -> the client's, for blocks relayed
        self.held: dict = {}  # upstream index -> a tool call's events, held to the end

    def relay(self, event, index):
        """``event`` numbered for the client, or None: held with its call."""
        if index in self.held:
            self.held[index].append(event)
            return None
        if index not in self.index:
            self.index[index] = self.shown
            self.shown += 1
        return numbered(event, self.key, self.index[index])

    def released(self, ours):
        """The held calls' events but those of ``ours`` (upstream indexes), numbered on."""
        for index, events in self.held.items():
            if index in ours:
                continue
            for event in events:
                yield numbered(event, self.key, self.shown)
            self.shown += 1
