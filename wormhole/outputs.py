"""Output paths: checked before a command simulates, written all or nothing.

Every command that writes files checks each output path first (``check_folder``
for an output folder, ``check_file`` for a single output file), so that a bad
path ends the command with one line before any simulation, and then writes
everything in one ``write_files`` transaction.

What is accepted:

* an output **folder** (``--out DIR``, ``--trace DIR``) may exist (it must be a
  folder we can write in) or not (its parent must then be an existing folder we
  can write in; the folder is created, only by the write); an existing regular
  file, or a missing parent, is an error;
* an output **file** (``--stats-json FILE``, ``cluster-pool --out FILE``, a
  memo database) may exist as a regular file (it is replaced) or not; an
  existing folder (or any other non-regular file), a path ending in a
  separator, a missing parent or one we cannot write in is an error;
* the files a folder will receive (``fct.txt`` in ``--out``) must not be
  folders, and no two outputs of one command may name the same file.

``write_files`` writes each file to a temporary name beside its final one, then
renames them into place; if anything fails (a full disk, an interrupt) nothing
is left behind: the temporary files, the folders it created and the files it
already renamed are removed, and files it replaced are restored.  Files are
created with the mode ``open()`` would give them (0666 less the umask).
"""
import os
import stat
import tempfile

from .errors import WormholeError


class OutputError(WormholeError):
    """An output path that cannot be written: an existing file where a folder is
    needed (or the reverse), a missing parent folder, a folder we cannot write in."""


def _text_ok(path, option):
    if not isinstance(path, (str, os.PathLike)):
        raise OutputError("%s needs a path" % option, value=path)
    path = os.fspath(path)
    if path == "":
        raise OutputError("%s is an empty path" % option, value=path)
    if "\0" in path:
        raise OutputError("%s contains a NUL byte" % option, value=path)
    return path


def _stat(path, option):
    """os.stat of ``path`` (following links), None if nothing is there."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise OutputError("cannot write %s: a part of the path is a file, not a folder" % option, path)
    except OSError as e:
        raise OutputError("cannot write %s: %s" % (option, e.strerror or e), path)


def _probe(folder, option, path):
    """Raise unless a file can be created in ``folder`` (tried, then removed:
    permission bits alone do not tell, e.g. for root or on read-only mounts)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".wormhole-probe-", dir=folder)
    except OSError as e:
        raise OutputError("cannot write %s: cannot create files in %s: %s"
                          % (option, folder, e.strerror or e), path)
    os.close(fd)
    os.unlink(probe)


def _parent(path, option, what):
    """The existing, writable parent folder of ``path`` (which does not exist).
    Not normalised: ``new/..`` has no parent when ``new`` does not exist."""
    trimmed = path.rstrip(os.sep) or os.sep
    parent = os.path.dirname(trimmed) or (os.sep if trimmed.startswith(os.sep) else os.curdir)
    st = _stat(parent, option)
    if st is None:
        raise OutputError("cannot write %s: the parent folder of the %s does not exist" % (option, what), path,
                          value=parent)
    if not stat.S_ISDIR(st.st_mode):
        raise OutputError("cannot write %s: the parent of the %s is a file, not a folder" % (option, what), path,
                          value=parent)
    _probe(parent, option, path)
    return parent


def check_file(path, option, folders=()):
    """Check an output file before anything runs; return its absolute path.
    An existing regular file is accepted (it will be replaced).  ``folders``:
    output folders of the same command, already checked, that the write will
    create (the file may be inside one)."""
    path = _text_ok(path, option)
    if path.endswith(os.sep) or (os.altsep and path.endswith(os.altsep)) or \
            os.path.basename(path) in (os.curdir, os.pardir):
        raise OutputError("%s names a folder; it needs a file" % option, path)
    st = _stat(path, option)
    if st is None:
        if os.path.islink(path):
            raise OutputError("%s is a broken symbolic link" % option, path)
        if os.path.realpath(os.path.dirname(path) or os.curdir) not in {os.path.realpath(f) for f in folders}:
            _parent(path, option, "file")
    elif stat.S_ISDIR(st.st_mode):
        raise OutputError("%s is an existing folder; it needs a file" % option, path)
    elif not stat.S_ISREG(st.st_mode):
        raise OutputError("%s exists and is not a regular file" % option, path)
    else:
        _probe(os.path.dirname(os.path.realpath(path)), option, path)
    return os.path.realpath(path)


def check_folder(path, option, names=()):
    """Check an output folder and the files it will receive (``names``, relative
    paths, may contain sub-folders) before anything runs; return the absolute
    paths of those files."""
    path = _text_ok(path, option)
    st = _stat(path, option)
    if st is None:
        if os.path.islink(path):
            raise OutputError("%s is a broken symbolic link" % option, path)
        _parent(path, option, "folder")
    elif not stat.S_ISDIR(st.st_mode):
        raise OutputError("%s is an existing file; it needs a folder" % option, path)
    else:
        _probe(path, option, path)
        for name in names:
            cur = path
            parts = [p for p in name.replace(os.altsep or os.sep, os.sep).split(os.sep) if p]
            for i, part in enumerate(parts):
                cur = os.path.join(cur, part)
                s = _stat(cur, option)
                if s is None:
                    break
                last = i == len(parts) - 1
                if last and stat.S_ISDIR(s.st_mode):
                    raise OutputError("cannot write %s: %s is a folder in the way of an output file"
                                      % (option, name), cur)
                if last and not stat.S_ISREG(s.st_mode):
                    raise OutputError("cannot write %s: %s exists and is not a regular file" % (option, name), cur)
                if not last and not stat.S_ISDIR(s.st_mode):
                    raise OutputError("cannot write %s: %s is a file in the way of an output folder"
                                      % (option, os.path.join(*parts[:i + 1])), cur)
    return [os.path.realpath(os.path.join(path, n)) for n in names]


def distinct(paths):
    """Raise if two outputs of one command name the same file."""
    seen = {}
    for option, p in paths:
        key = os.path.realpath(p)
        if key in seen and seen[key] != option:
            raise OutputError("%s and %s name the same file" % (seen[key], option), p)
        seen[key] = option


def _mode():
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_files(files):
    """Write every file of ``files`` (path -> str or bytes) or none of them."""
    mode = _mode()
    created, tmp, backups, placed, stale = [], [], [], [], []
    current = None
    try:
        for path in files:
            current = path
            d = os.path.dirname(os.path.realpath(path))
            missing = []
            while not os.path.isdir(d):
                missing.append(d)
                d = os.path.dirname(d)
            for m in reversed(missing):
                os.mkdir(m)
                created.append(m)
        for path, data in files.items():
            current = path
            path = os.path.realpath(path)        # as the OS resolves it (links, then "..")
            fd, t = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=os.path.dirname(path))
            tmp.append((t, path))
            with os.fdopen(fd, "wb") as fh:
                os.fchmod(fh.fileno(), mode)
                fh.write(data.encode() if isinstance(data, str) else data)
        for t, path in tmp:
            current = path
            if os.path.lexists(path):
                fd, b = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".old.", dir=os.path.dirname(path))
                os.close(fd)
                stale.append(b)
                os.replace(path, b)             # the old file is kept until all are in place
                stale.pop()
                backups.append((b, path))
            os.replace(t, path)
            placed.append(path)
    except BaseException as e:
        undo = [(os.unlink, t) for t, _ in tmp] + [(os.unlink, b) for b in stale] + [(os.unlink, p) for p in placed]
        undo += [(lambda bp: os.replace(*bp), (b, p)) for b, p in reversed(backups)]
        undo += [(os.rmdir, d) for d in reversed(created)]
        for fn, arg in undo:
            try:
                fn(arg)
            except OSError:
                pass
        if isinstance(e, OSError):
            raise OutputError("cannot write the output (nothing was written): %s" % (e.strerror or e), current) from e
        raise
    for b, _ in backups:
        os.unlink(b)


def write_atomic(folder, files):
    """``write_files`` of ``files`` (name -> str or bytes) in ``folder``."""
    write_files({os.path.join(folder, name): data for name, data in files.items()})


def figure_bytes(fig, dpi=110):
    """A matplotlib figure as PNG bytes (for ``write_files``)."""
    import io
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
