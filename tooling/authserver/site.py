"""The served origin: the current world, replaced by ``POST /_config``, as a Starlette app behind uvicorn."""

from __future__ import annotations

import socket

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .scenario import Scenario
from .world import World

__all__ = ["ReadyServer", "Site", "build_app"]


class Site:
    """The served origin: the current :class:`World`, replaced by ``POST /_config``."""

    def __init__(self, scenario: Scenario, base: str) -> None:
        self.base = base
        self.world = World(scenario, base)

    async def dispatch(self, request: Request) -> Response:
        """Reconfigure on ``POST /_config``; hand everything else to the current world."""
        if request.url.path == "/_config" and request.method == "POST":
            try:
                scenario = Scenario.from_json((await request.body()).decode())
            except (ValueError, TypeError) as exc:
                return JSONResponse({"error": "invalid_config", "error_description": str(exc)}, status_code=400)
            self.world = World(scenario, self.base)
            return Response(status_code=204)
        return await self.world.dispatch(request)


def build_app(scenario: Scenario, base: str) -> Starlette:
    """Build the Starlette application of one scenario served at ``base``."""
    site = Site(scenario, base)
    methods = ["GET", "POST", "DELETE", "PUT", "PATCH"]
    return Starlette(routes=[Route("/{path:path}", site.dispatch, methods=methods)])


class ReadyServer(uvicorn.Server):
    """A uvicorn server that prints ``READY <base>`` once it accepts connections."""

    def __init__(self, config: uvicorn.Config, base: str) -> None:
        super().__init__(config)
        self.base = base

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start listening, then announce readiness on stdout."""
        await super().startup(sockets=sockets)
        if self.started and not self.should_exit:
            print(f"READY {self.base}", flush=True)
