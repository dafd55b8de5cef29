"""Finding a plugin by name: memstrata's own registrations first, then everyone's.

The built-in vector backends and embedders are entry points like any plugin's, so an
install without them fails loudly. Listing a group means reading the metadata of every
installed distribution (about 70 ms with a hundred packages, paid again on each call),
and opening a memory resolves two names. A name memstrata registers itself is found in
its own metadata (one small file); only another name is looked for among every
distribution's. A third-party plugin cannot shadow a built-in name: the built-in wins,
where listing all of them once let the order of ``sys.path`` decide.
"""

from __future__ import annotations

import contextlib
from importlib.metadata import EntryPoint, PackageNotFoundError, distribution, entry_points

__all__ = ["available", "find"]

#: the distribution whose registrations are read first
OWN = "memstrata"


def find(group: str, name: str) -> EntryPoint | None:
    """The entry point registered as ``name`` in ``group`` (not loaded), or None."""
    try:
        own = distribution(OWN).entry_points
    except PackageNotFoundError:
        own = None
    if own is not None:
        for ep in own:
            if ep.group == group and ep.name == name:
                return ep
    for ep in entry_points(group=group):
        if ep.name == name:
            return ep
    return None


def available(group: str) -> dict[str, EntryPoint]:
    """Every entry point of ``group`` by name (not loaded); a built-in name is memstrata's."""
    found = {ep.name: ep for ep in entry_points(group=group)}
    with contextlib.suppress(PackageNotFoundError):
        found.update({ep.name: ep for ep in distribution(OWN).entry_points
                      if ep.group == group})
    return found
