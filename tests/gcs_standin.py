"""A ``gs://`` stand-in for tests: Beam's filesystem registry resolves ``gs://BUCKET/...`` to a local folder, with
object-store semantics (no directories: listing is by name prefix), so code that reaches files only through
``apache_beam.io.filesystems`` can be run on ``gs://`` paths without a network. Beam's own GCS filesystem is
unregistered while the stand-in is active (the registry refuses two filesystems for one scheme).

As on GCS, an object appears whole when its writer closes it (it is written aside, then renamed into place), and
:meth:`GcsStandIn.create_only` is GCS's create-only write (``ifGenerationMatch=0``), with ``os.O_EXCL``: the seam
:func:`components.release.versions.create_only` uses when the registered filesystem offers it."""
from __future__ import annotations

import io
import os
import uuid

from apache_beam.io.filesystem import CompressedFile, CompressionTypes, FileMetadata
from apache_beam.io.localfilesystem import LocalFileSystem


class _Upload(io.FileIO):
    """A file written aside and renamed to ``final`` when closed."""

    def __init__(self, aside: str, final: str):
        super().__init__(aside, "wb")
        self._final = final

    def close(self):
        if not self.closed:
            super().close()
            os.makedirs(os.path.dirname(self._final), exist_ok=True)
            os.replace(self.name, self._final)


class GcsStandIn(LocalFileSystem):
    root = None  # the local folder that holds the buckets; set while active

    @classmethod
    def scheme(cls):
        return "gs" if cls.root else "gs-stand-in-inactive"

    def _local(self, path: str) -> str:
        assert path.startswith("gs://"), path
        return os.path.join(self.root, path[len("gs://"):])

    def _gs(self, local: str) -> str:
        return "gs://" + os.path.relpath(local, self.root).replace(os.sep, "/")

    def has_dirs(self):
        return False

    UPLOADS = ".uploads"  # objects being written, under the root: never listed

    def _list(self, prefix):
        for dirpath, dirs, names in os.walk(self.root):
            if dirpath == self.root and self.UPLOADS in dirs:
                dirs.remove(self.UPLOADS)
            for name in sorted(names):
                local = os.path.join(dirpath, name)
                path = self._gs(local)
                if path.startswith(prefix):
                    try:
                        yield FileMetadata(path, os.path.getsize(local), os.path.getmtime(local))
                    except FileNotFoundError:
                        pass  # deleted by another writer while listing

    def mkdirs(self, path):
        pass  # an object store has no folders

    def create(self, path, mime_type="application/octet-stream", compression_type=CompressionTypes.AUTO):
        """A write channel whose object appears at ``path`` only when it is closed, whole."""
        aside = os.path.join(self.root, self.UPLOADS, uuid.uuid4().hex)
        os.makedirs(os.path.dirname(aside), exist_ok=True)
        channel = io.BufferedWriter(_Upload(aside, self._local(path)))
        compression_type = self._get_compression_type(path, compression_type)
        if compression_type == CompressionTypes.UNCOMPRESSED:
            return channel
        return CompressedFile(channel, compression_type=compression_type)

    def create_only(self, path, data=b""):
        """Create the object ``path`` unless it exists: True when this call created it (GCS's
        ``ifGenerationMatch=0``)."""
        local = self._local(path)
        os.makedirs(os.path.dirname(local), exist_ok=True)
        try:
            fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return True

    def open(self, path, *args, **kwargs):
        return super().open(self._local(path), *args, **kwargs)

    def copy(self, sources, destinations):
        return super().copy([self._local(p) for p in sources], [self._local(p) for p in destinations])

    def rename(self, sources, destinations):
        for destination in destinations:
            os.makedirs(os.path.dirname(self._local(destination)), exist_ok=True)
        super().rename([self._local(p) for p in sources], [self._local(p) for p in destinations])
        self._prune(sources)

    def _prune(self, paths):
        """Remove the local folders above ``paths`` left empty: an object store has none once its objects are gone.
        Only those folders, so that another writer's new, still empty folder stays."""
        for path in paths:
            folder = os.path.dirname(self._local(path).rstrip(os.sep))
            while folder != self.root and os.path.isdir(folder) and not os.listdir(folder):
                os.rmdir(folder)
                folder = os.path.dirname(folder)

    def exists(self, path):
        return os.path.isfile(self._local(path))  # an object, not a "folder"

    def size(self, path):
        return super().size(self._local(path))

    def last_updated(self, path):
        return super().last_updated(self._local(path))

    def checksum(self, path):
        return super().checksum(self._local(path))

    def metadata(self, path):
        local = self._local(path)
        return FileMetadata(path, os.path.getsize(local), os.path.getmtime(local))

    def delete(self, paths):
        import shutil

        for path in paths:  # an object, or every object under a "folder/" prefix, as on GCS
            local = self._local(path)
            if os.path.isdir(local):
                shutil.rmtree(local)
            elif os.path.isfile(local):
                os.remove(local)
            else:
                raise IOError(f"{path}: no such object")
        self._prune(paths)

    def report_lineage(self, path, lineage):
        pass
