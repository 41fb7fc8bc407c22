"""Fixtures for the picture tests (helpers live in pictures_support.py)."""

from __future__ import annotations

import pytest

from tests.render.pictures_support import SSD_320_MAPS, multiple_grid_anchors


@pytest.fixture
def ssd320_anchors():
    """The story's face SSD: 320x320 input, 2034 anchors, from the test's own TF OD API formula."""
    return multiple_grid_anchors(SSD_320_MAPS)
