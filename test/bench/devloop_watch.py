"""Report the CDK apps a process creates and synthesizes under DIR (Linux inotify), until
killed. test/bench/devloop.sh runs each test package with its own empty TMPDIR and this
watcher on it:

- every CDK app constructed without an explicit outdir creates a fresh DIR/cdk.out*
  directory for its cloud assembly at construction: printed as "app PATH";
- synthesizing an app writes manifest.json into its assembly directory, wherever that is
  under DIR (a test's t.TempDir() outdir included; nested stage assemblies, assembly-*,
  are not counted): printed as "synth PATH". A second synth of the same app reuses its
  assembly and writes nothing.

CDK removes its temporary assemblies when the process exits, so they cannot be counted
afterwards. The Go build's and jsii's own directories (go-build*, jsii-*) are not watched.

    python3 test/bench/devloop_watch.py DIR
"""
import ctypes
import os
import struct
import sys

IN_CREATE, IN_MOVED_TO, IN_ISDIR = 0x100, 0x80, 0x40000000
SKIP = ("go-build", "jsii-")


def main(root):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init()
    dirs = {}  # watch descriptor -> directory path
    seen = set()

    def report(kind, path):
        if (kind, path) not in seen:
            seen.add((kind, path))
            print(kind, path, flush=True)

    def manifest(dirpath):
        if not os.path.basename(dirpath).startswith("assembly-"):
            report("synth", dirpath)

    def watch(path):
        # Watch path, then look at what is already inside: entries created before the watch
        # was in place raised no event.
        wd = libc.inotify_add_watch(fd, path.encode(), IN_CREATE | IN_MOVED_TO)
        if wd < 0:
            return  # gone already
        dirs[wd] = path
        try:
            entries = list(os.scandir(path))
        except OSError:
            return
        for e in entries:
            if e.name == "manifest.json":
                manifest(path)
            elif e.is_dir(follow_symlinks=False) and not (path == root and e.name.startswith(SKIP)):
                if path == root and e.name.startswith("cdk.out"):
                    report("app", e.path)
                watch(e.path)

    watch(root)
    print("ready", flush=True)
    while True:
        buf = os.read(fd, 65536)
        i = 0
        while i < len(buf):
            wd, mask, _, n = struct.unpack_from("iIII", buf, i)
            name = buf[i + 16:i + 16 + n].rstrip(b"\0").decode()
            i += 16 + n
            parent = dirs.get(wd)
            if parent is None:
                continue
            if mask & IN_ISDIR:
                if parent == root and name.startswith(SKIP):
                    continue
                if parent == root and name.startswith("cdk.out"):
                    report("app", os.path.join(parent, name))
                watch(os.path.join(parent, name))
            elif name == "manifest.json":
                manifest(parent)


if __name__ == "__main__":
    main(sys.argv[1])
