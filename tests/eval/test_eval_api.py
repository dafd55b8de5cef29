"""memstrata.eval exposes exactly its __all__, and the CLI starts without the model."""

from __future__ import annotations

import inspect
import subprocess
import sys

import memstrata.eval as ev


def test_eval_all_lists_exactly_the_public_names():
    missing = [n for n in ev.__all__ if not hasattr(ev, n)]
    assert missing == []
    public = {
        n for n, obj in vars(ev).items()
        if not n.startswith("_") and (inspect.isclass(obj) or inspect.isfunction(obj))
        and (getattr(obj, "__module__", "") or "").startswith("memstrata")
    }
    assert public - set(ev.__all__) == set()


def test_cli_help_does_not_load_torch_or_matplotlib():
    code = ("import sys; from click.testing import CliRunner; from memstrata.cli import main; "
            "r = CliRunner().invoke(main, ['eval', '--help']); assert r.exit_code == 0, r.output; "
            "assert 'recall@k' in r.output; "
            "print(sorted(m for m in ('torch', 'matplotlib', 'sentence_transformers') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
