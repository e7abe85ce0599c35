"""Errors raised at the boundary: each names the file, the line and the value."""


class WormholeError(Exception):
    """Base of every error wormhole raises on bad input or impossible requests.

    ``file``, ``line`` and ``value`` locate the problem when it comes from a file;
    ``str(err)`` is one line that a CLI can print as is.
    """

    def __init__(self, message, file=None, line=None, value=None):
        self.message = message
        self.file = None if file is None else str(file)
        self.line = line
        self.value = value
        super().__init__(self._render())

    def _render(self):
        where = ""
        if self.file is not None:
            where = self.file
            if self.line is not None:
                where += ":%d" % self.line
            where += ": "
        text = where + self.message
        if self.value is not None:
            text += " (value: %r)" % (self.value,)
        return text


class TopologyError(WormholeError):
    """Bad topology: unknown node, duplicate or dangling link, zero rate, ..."""


class FlowFileError(WormholeError):
    """Bad flow list: short or unsorted file, negative size, non-host endpoint, ..."""


class ConfigError(WormholeError):
    """Unknown configuration key or a value of the wrong type or range."""


class RoutingError(WormholeError):
    """No path between two hosts."""


class ResourceLimitError(WormholeError):
    """A run would exceed a configured resource limit (packets in flight)."""


class ContentionError(WormholeError):
    """Unknown contention model (wormhole.cluster) or a bad model parameter."""


class NotAvailableError(WormholeError):
    """A feature that is not built yet, or that the chosen backend does not have
    (the flow backend has no packets, queues, PFC, congestion control or
    accelerator), was requested; the message names what and where."""


def read_text(path, error_cls, what):
    """The whole of a UTF-8 text file; an unreadable or binary file raises
    ``error_cls`` naming the file ("cannot read <what>", "<what> is not text")."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as e:
        raise error_cls("cannot read %s: %s" % (what, e.strerror), path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise error_cls("%s is not text (UTF-8)" % what, path)


def read_yaml(path, error_cls, what):
    """A YAML document from a text file; bad YAML raises ``error_cls`` naming the
    file and the line ("<what> is not valid YAML: ...")."""
    import yaml
    text = read_text(path, error_cls, what)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise error_cls("not valid YAML: %s" % getattr(e, "problem", e), path, None if mark is None else mark.line + 1)


class ApiError(WormholeError):
    """Misuse of the Network API: a bad argument (wrong type, unit or range, an
    unknown host, connection or port).  ``argument`` names it; the message reads
    ``<call>: <argument> ...``."""

    def __init__(self, message, argument=None, value=None):
        self.argument = argument
        super().__init__(message, value=value)
