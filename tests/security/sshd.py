"""A real OpenSSH server on loopback, started by the test, with its own keys and config."""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import free_port

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


@dataclass
class Sshd:
    process: subprocess.Popen[bytes]
    port: int
    user: str
    client_config: Path
    """An ssh_config that trusts this server's host key and logs in with the test's key."""
    directory: Path

    def config_with(self, **options: str) -> Path:
        """The client config with some options changed, as a new file."""
        lines = [
            line
            for line in self.client_config.read_text().splitlines()
            if line.split()[0] not in options
        ]
        lines += [f"    {name} {value}" for name, value in options.items()]
        path = self.directory / f"ssh_config.{len(list(self.directory.glob('ssh_config.*')))}"
        path.write_text("\n".join(lines) + "\n")
        return path

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def unavailable() -> str | None:
    """Why a test sshd cannot run here, or None."""
    if not (os.path.exists(SSHD) and shutil.which("ssh") and shutil.which("ssh-keygen")):
        return "OpenSSH (openssh-server, openssh-client) is not installed; .ci/run installs it"
    return None


def start_sshd(directory: Path) -> Sshd:
    host_key, user_key = directory / "host_key", directory / "user_key"
    _keygen(host_key)
    _keygen(user_key)
    authorized = directory / "authorized_keys"
    authorized.write_text((directory / "user_key.pub").read_text())
    port = free_port()
    config = directory / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
        f"AuthorizedKeysFile {authorized}\nPidFile {directory / 'sshd.pid'}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
        "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nLogLevel VERBOSE\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
    log = directory / "sshd.log"
    with open(log, "wb") as log_file:
        process = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(config)], stderr=log_file, stdin=subprocess.DEVNULL
        )
    known_hosts = directory / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {(directory / 'host_key.pub').read_text()}")
    client_config = directory / "ssh_config"
    client_config.write_text(
        "Host *\n"
        f"    IdentityFile {user_key}\n    IdentitiesOnly yes\n"
        f"    UserKnownHostsFile {known_hosts}\n    StrictHostKeyChecking yes\n"
        "    GlobalKnownHostsFile /dev/null\n    ConnectTimeout 10\n"
    )
    deadline = time.monotonic() + 15
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited: {log.read_text(errors='replace').strip()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                process.kill()
                raise RuntimeError("sshd did not start listening") from None
            time.sleep(0.05)  # ok: polling for the port to open
    return Sshd(process, port, getpass.getuser(), client_config, directory)
