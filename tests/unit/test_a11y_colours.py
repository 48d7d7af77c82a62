"""The app's colours, checked as colour-blind visitors see them: each categorical palette is
simulated for protanopia, deuteranopia and tritanopia (Machado, Oliveira & Fernandes 2009,
"A physiologically-based model for simulation of color vision deficiency", severity 1.0, applied
to linear RGB), and every two colours drawn together must stay at least MIN_DELTA_E apart (CIE76
ΔE*ab in CIELAB, D65); each sequential colour scale a figure uses must be monotonic in
lightness (L*) for normal vision and under each simulation, so "more" reads as "lighter"."""
from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest
from plotly.colors import hex_to_rgb, sample_colorscale, unlabel_rgb

from explorer import plotting
from explorer.architecture.blocks import STAGE_COLORS
from explorer.flash.figures import TILE_COLORS
from explorer.generate import figures as generate_figures

ROOT = Path(__file__).resolve().parents[2]

# ΔE*ab 10: well past the just-noticeable difference (about 2.3), the usual bar for two
# categories told apart at a glance in a legend.
MIN_DELTA_E = 10.0

MACHADO = {
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                   [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                     [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                   [0.004733, 0.691367, 0.303900]],
}
VISIONS = {"normal": np.eye(3), **{name: np.array(m) for name, m in MACHADO.items()}}
SRGB_TO_XYZ = np.array([[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750],
                        [0.0193339, 0.1191920, 0.9503041]])
D65 = np.array([0.95047, 1.0, 1.08883])


def srgb(colour: str) -> np.ndarray:
    colour = colour.strip()
    values = hex_to_rgb(colour) if colour.startswith("#") else unlabel_rgb(colour)
    return np.asarray(values[:3], dtype=float) / 255


def lab(colour: str, vision: str = "normal") -> np.ndarray:
    """CIELAB of `colour` as seen with `vision` (the simulation acts on linear RGB)."""
    s = srgb(colour)
    linear = np.where(s <= 0.04045, s / 12.92, ((s + 0.055) / 1.055) ** 2.4)
    linear = np.clip(VISIONS[vision] @ linear, 0.0, 1.0)
    t = SRGB_TO_XYZ @ linear / D65
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(a: str, b: str, vision: str) -> float:
    return float(np.linalg.norm(lab(a, vision) - lab(b, vision)))


# The colours drawn together in one figure (a legend's categories, a grid's states).
PALETTES = {
    "OKABE_ITO": list(plotting.OKABE_ITO.values()),
    "MASK_COLORS (hidden, visible)": [plotting.MASK_COLORS[0][1], plotting.MASK_COLORS[-1][1]],
    "generate KIND_COLOURS": list(generate_figures.KIND_COLOURS.values()),
    "generate cached/uncached/live": [generate_figures.CACHED_COLOUR, generate_figures.UNCACHED_COLOUR,
                                      generate_figures.LIVE_COLOUR],
    "flash TILE_COLORS": list(TILE_COLORS),
    "architecture STAGE_COLORS": list(STAGE_COLORS.values()),
    # colors(n): the categories of a figure's lines (up to 8 RoPE bases), on Viridis and Cividis
    **{f"colors({n})": plotting.colors(n) for n in range(2, 9)},
    **{f"colors({n}, Cividis)": plotting.colors(n, "Cividis") for n in range(2, 6)},
}


def test_the_simulation_matches_machado_on_known_colours():
    # pure red and green collapse under deuteranopia, and stay far apart in normal vision
    assert delta_e("#ff0000", "#00ff00", "normal") > 80
    assert delta_e("#ff0000", "#00ff00", "deuteranopia") < delta_e("#ff0000", "#00ff00", "normal") / 2
    # blue and green, the tritan confusion, come closer under tritanopia than under protanopia
    assert delta_e("#0000ff", "#00ff00", "tritanopia") < delta_e("#0000ff", "#00ff00", "protanopia")
    # white stays white (each Machado row sums to 1)
    assert np.allclose(lab("#ffffff", "tritanopia"), [100, 0, 0], atol=0.5)


@pytest.mark.parametrize("name", sorted(PALETTES))
def test_every_pair_of_a_palette_stays_distinguishable_under_colour_blindness(name):
    palette = PALETTES[name]
    closest = min((delta_e(a, b, vision), a, b, vision)
                  for a, b in itertools.combinations(palette, 2) for vision in VISIONS)
    assert closest[0] >= MIN_DELTA_E, f"{name}: {closest[1]} and {closest[2]} are ΔE {closest[0]:.1f} apart " \
                                      f"under {closest[3]}"


def scales_used() -> set[str]:
    """Every named colour scale a figure module passes as colorscale=, and the shared ones."""
    found = {plotting.SEQUENTIAL}
    for path in (ROOT / "explorer").rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        found |= set(re.findall(r"colorscale=\"(\w+)\"", source))
        found |= set(re.findall(r"^COLORSCALE = \"(\w+)\"", source, re.M))
        found |= set(re.findall(r"colors\([^()]*, \"(\w+)\"\)", source))
    return found


def test_the_scales_found_include_those_known_to_be_used():
    assert {"Viridis", "Cividis"} <= scales_used()


@pytest.mark.parametrize("scale", sorted(scales_used()))
@pytest.mark.parametrize("vision", sorted(VISIONS))
def test_each_sequential_scale_grows_lighter_monotonically(scale, vision):
    lightness = [lab(c, vision)[0] for c in sample_colorscale(scale, list(np.linspace(0, 1, 101)))]
    steps = np.diff(lightness)
    assert np.all(steps > 0), f"{scale} under {vision}: L* falls by {-steps.min():.2f} somewhere"


def test_a_mask_reads_dark_for_hidden_and_light_for_visible_in_every_vision():
    for vision in VISIONS:
        assert lab(plotting.MASK_COLORS[-1][1], vision)[0] - lab(plotting.MASK_COLORS[0][1], vision)[0] > 50
