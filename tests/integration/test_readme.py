"""The README's SDK example runs as written against a real cluster (only the address differs)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from clusterprocs import Processes

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_sdk_example_runs(processes: Processes, tmp_path: Path) -> None:
    ns = processes.namesrv()
    processes.broker(ns.address)
    (snippet,) = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert 'NAMESRV = "127.0.0.1:9876"' in snippet
    script = tmp_path / "example.py"
    script.write_text(snippet.replace('NAMESRV = "127.0.0.1:9876"', f'NAMESRV = "{ns.address}"'))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "SendStatus.SEND_OK" in done.stdout
    assert "TopicTest TagA b'hello'" in done.stdout
