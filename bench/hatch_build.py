"""Put ../localmem_bench into the wheel built from bench/, but not into an editable one: there
dev-mode-dirs puts the checkout's root on sys.path, so a copy would hide the code being edited."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class BenchPackage(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "standard":
            build_data["force_include"][str(Path(self.root).parent / "localmem_bench")] = "localmem_bench"
