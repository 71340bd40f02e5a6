"""A ``gs://`` stand-in for tests: Beam's filesystem registry resolves ``gs://BUCKET/...`` to a local folder, with
object-store semantics (no directories: listing is by name prefix), so code that reaches files only through
``apache_beam.io.filesystems`` can be run on ``gs://`` paths without a network. Beam's own GCS filesystem is
unregistered while the stand-in is active (the registry refuses two filesystems for one scheme)."""
from __future__ import annotations

import os

from apache_beam.io.filesystem import FileMetadata
from apache_beam.io.localfilesystem import LocalFileSystem


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

    def _list(self, prefix):
        for dirpath, _, names in os.walk(self.root):
            for name in sorted(names):
                local = os.path.join(dirpath, name)
                path = self._gs(local)
                if path.startswith(prefix):
                    yield FileMetadata(path, os.path.getsize(local), os.path.getmtime(local))

    def mkdirs(self, path):
        pass  # an object store has no folders

    def create(self, path, *args, **kwargs):
        return super().create(self._local(path), *args, **kwargs)

    def open(self, path, *args, **kwargs):
        return super().open(self._local(path), *args, **kwargs)

    def copy(self, sources, destinations):
        return super().copy([self._local(p) for p in sources], [self._local(p) for p in destinations])

    def rename(self, sources, destinations):
        for destination in destinations:
            os.makedirs(os.path.dirname(self._local(destination)), exist_ok=True)
        super().rename([self._local(p) for p in sources], [self._local(p) for p in destinations])
        self._prune()

    def _prune(self):
        """Remove local folders left empty: an object store has none once its objects are gone."""
        for dirpath, dirs, files in sorted(os.walk(self.root), reverse=True):
            if dirpath != self.root and not dirs and not files:
                os.rmdir(dirpath)

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
        self._prune()

    def report_lineage(self, path, lineage):
        pass
