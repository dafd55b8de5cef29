"""``memstrata eval DATA`` - measure recall quality on a dataset, one command.

Loaded by :mod:`memstrata.cli` through the ``commands`` list; heavy imports
(the model, matplotlib) happen when the command runs, not when the CLI starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

__all__ = ["commands", "eval_command"]


def _ks(_ctx: click.Context, _param: click.Parameter, value: str | None
        ) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        ks = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError as exc:
        raise click.BadParameter("use comma-separated integers, e.g. 1,5,10") from exc
    if not ks:
        raise click.BadParameter("give at least one k")
    return ks


def _names(_ctx: click.Context, _param: click.Parameter, value: str | None
           ) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(part.strip() for part in value.split(",") if part.strip())


@click.command("eval")
@click.argument("data", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--k", "ks", callback=_ks, default=None, metavar="1,5,10",
              help="Cut-offs to report (default 1,5,10).")
@click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False),
              default=None, help="TOML or JSON evaluation config (see docs/eval.md).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False),
              default=Path("memstrata-eval"), show_default=True,
              help="Where results.json, report.md and the PNG plots go.")
@click.option("--retrievers", callback=_names, default=None, metavar="dense,keyword,rrf,default",
              help="Built-in retrievers to compare (default: all four).")
@click.option("--cache", "cache_dir", type=click.Path(path_type=Path, file_okay=False),
              default=None, help="Keep the ingested database here and reuse it next time.")
@click.option("--conversations", type=click.IntRange(min=1), default=None,
              help="Only the first N conversations.")
@click.option("--questions", "probes", type=click.IntRange(min=1), default=None,
              help="At most N questions per conversation (sampled with the config seed).")
@click.option("--no-plots", is_flag=True, help="Skip the PNG plots.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
def eval_command(data: Path, ks: tuple[int, ...] | None, config_path: Path | None,
                 out_dir: Path, retrievers: tuple[str, ...] | None, cache_dir: Path | None,
                 conversations: int | None, probes: int | None, no_plots: bool,
                 quiet: bool) -> None:
    """Evidence recall@k, nDCG, MRR and token budgets of each retriever on DATA.

    DATA is LoCoMo JSON (.json) or memstrata JSONL (.jsonl). Prints the table
    and writes results.json, report.md and plots to --out.
    """
    if not quiet:  # before the imports below: the first line comes at once
        click.echo(f"loading {data}", err=True)
    from memstrata.eval import EvalConfig, evaluate, load_dataset
    from memstrata.eval._report import language_table, summary_table

    overrides: dict[str, Any] = {}
    if ks is not None:
        overrides["k"] = ks
    if retrievers is not None:
        overrides["retrievers"] = retrievers
    if conversations is not None:
        overrides["conversations"] = conversations
    if probes is not None:
        overrides["probes_per_conversation"] = probes
    config = (EvalConfig.from_file(config_path, **overrides) if config_path is not None
              else EvalConfig.build(**overrides))
    dataset = load_dataset(
        data,
        exclude_categories=config.exclude_categories,
        include_captions=config.include_captions,
    )
    if not quiet:
        click.echo(f"{dataset.name}: {len(dataset.conversations)} conversations, "
                   f"{dataset.n_turns} turns, {dataset.n_probes} questions", err=True)
    result = evaluate(dataset, config, cache_dir=cache_dir, progress=not quiet)
    paths = result.save(out_dir, plots=not no_plots)
    click.echo(summary_table(result))
    click.echo("")
    k = 5 if 5 in result.ks else result.ks[len(result.ks) // 2]
    languages = language_table(result, k)
    if languages is not None:  # the data mixes languages
        click.echo(f"recall@{k} / hit@{k} by language of the question:")
        click.echo(languages)
        click.echo("")
    for name, path in sorted(paths.items()):
        click.echo(f"{name}: {path}")


commands = [eval_command]
