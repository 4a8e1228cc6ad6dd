"""D3-Gym: turn scientific repositories into verifiable data-driven-discovery tasks.

The construction pipeline lives in :mod:`veriforge.discovery.build` (one small module per stage:
``repo``, ``mine``, ``standalone``, ``deps``, ``envbuild``, ``goldrun``, ``package``); the task folder
schema is described in docs/d3gym.md. Nothing heavy is imported here so ``import veriforge.discovery``
stays cheap.
"""
