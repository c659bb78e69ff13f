"""A small Server-Sent Events parser (the WHATWG ``text/event-stream`` format).

:class:`SSEDecoder` is fed bytes as they arrive, in chunks of any size (a line, a
multi-byte UTF-8 character or a CRLF pair may be split across chunks), and returns the
events completed so far:

- lines end with CRLF, LF or CR;
- a line starting with ``:`` is a comment (keep-alive) and is ignored;
- ``field: value`` (one space after the colon is dropped), or ``field`` alone (empty value);
- ``data`` lines are joined with ``\\n``; ``event`` sets the type (default ``message``);
  ``id`` sets the last event id (kept across events, ignored when it contains NUL);
  ``retry`` (digits only) sets the reconnection delay in milliseconds; other fields are
  ignored;
- an empty line dispatches the event; an event with no ``data`` is not dispatched (but its
  ``id`` still counts); an unterminated event at the end of the stream is dropped.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import List, Optional

__all__ = ["ServerSentEvent", "SSEDecoder"]


@dataclass
class ServerSentEvent:
    """One dispatched event."""

    #: The ``event:`` type, ``"message"`` when none was given.
    event: str
    #: The ``data:`` lines joined with ``\n``.
    data: str
    #: The last event id in force when the event was dispatched (``None`` if never set).
    id: Optional[str] = None
    #: The ``retry:`` value (milliseconds) given inside this event's block, if any.
    retry: Optional[int] = None


class SSEDecoder:
    """Incremental parser: ``feed(bytes) -> [events]``, then ``close()`` at the end."""

    def __init__(self, last_event_id: Optional[str] = None) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        # A chunk that ended with CR: a LF at the start of the next belongs to it.
        self._skip_lf = False
        self._started = False
        self._data: List[str] = []
        self._event = ""
        self._block_retry: Optional[int] = None
        #: The last event id buffer (persists across events and reconnections).
        self.last_event_id: Optional[str] = last_event_id
        #: The latest ``retry:`` value in milliseconds, if the stream sent one.
        self.retry: Optional[int] = None

    def feed(self, chunk: bytes) -> List[ServerSentEvent]:
        """Parses ``chunk``; returns the events it completed."""
        return self._feed_text(self._utf8.decode(chunk))

    def close(self) -> List[ServerSentEvent]:
        """Ends the stream. An event not ended by an empty line is dropped (as the format
        says), so this returns nothing but flushes the decoder state."""
        self._feed_text(self._utf8.decode(b"", final=True))
        self._buffer = ""
        self._reset_event()
        return []

    def _feed_text(self, text: str) -> List[ServerSentEvent]:
        if not self._started and text:
            # A leading byte order mark is ignored.
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        if self._skip_lf and text:
            if text.startswith("\n"):
                text = text[1:]
            self._skip_lf = False
        self._buffer += text
        events: List[ServerSentEvent] = []
        while True:
            cr = self._buffer.find("\r")
            lf = self._buffer.find("\n")
            if cr == -1 and lf == -1:
                break
            if cr != -1 and (lf == -1 or cr < lf):
                line, rest = self._buffer[:cr], self._buffer[cr + 1 :]
                if rest.startswith("\n"):
                    rest = rest[1:]
                elif rest == "":
                    # The LF of a CRLF may be in the next chunk.
                    self._skip_lf = True
            else:
                line, rest = self._buffer[:lf], self._buffer[lf + 1 :]
            self._buffer = rest
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def _reset_event(self) -> None:
        self._data = []
        self._event = ""
        self._block_retry = None

    def _line(self, line: str) -> Optional[ServerSentEvent]:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif name == "retry":
            if value.isdigit() and value.isascii():
                self.retry = int(value)
                self._block_retry = self.retry
        return None

    def _dispatch(self) -> Optional[ServerSentEvent]:
        if not self._data:
            self._reset_event()
            return None
        event = ServerSentEvent(
            event=self._event or "message",
            data="\n".join(self._data),
            id=self.last_event_id,
            retry=self._block_retry,
        )
        self._reset_event()
        return event
