"""Colour arithmetic for accessibility checks: WCAG contrast, colour-vision-deficiency simulation, CIEDE2000.

Pure numpy. Colours are CSS strings ("#RRGGBB", "#RGB", "rgb(r, g, b)", "rgba(r, g, b, a)", a few names) or sRGB
arrays in [0, 1] with the channels last, shape (..., 3)."""

from __future__ import annotations

import re

import numpy as np

# The CSS names the figures use; anything else is written as hex or rgb().
NAMED = {"black": "#000000", "white": "#ffffff", "grey": "#808080", "gray": "#808080"}

# Machado, Oliveira & Fernandes (2009), "A Physiologically-based Model for Simulation of Color Vision Deficiency",
# IEEE TVCG 15(6), table of matrices at severity 1.0 (dichromacy); the same literals as colorspacious' and
# daltonlens' machado2009 tables. They act on linear RGB.
MACHADO_2009 = {
    "protanopia": np.array([[0.152286, 1.052583, -0.204868],
                            [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968],
                              [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779],
                            [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}
CVD_KINDS = tuple(MACHADO_2009)

# sRGB (IEC 61966-2-1) primaries to CIE XYZ, and the D65 white the CIELAB conversion is relative to
_RGB_TO_XYZ = np.array([[0.4124564, 0.3575761, 0.1804375],
                        [0.2126729, 0.7151522, 0.0721750],
                        [0.0193339, 0.1191920, 0.9503041]])
_D65 = np.array([0.95047, 1.0, 1.08883])
_RGB = re.compile(r"rgba?\(\s*([^)]*)\)\s*$", re.IGNORECASE)


def hex_to_rgb(color: str) -> tuple[int, int, int]:
    """"#RRGGBB" or the CSS shorthand "#RGB" (each digit doubled) as 0..255 integers."""
    h = color.strip().lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    if len(h) != 6 or any(c not in "0123456789abcdefABCDEF" for c in h):
        raise ValueError(f"{color!r} is not a hex colour like #1f77b4 or #fff.")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def _parse(color: str) -> tuple[np.ndarray, float]:
    """A CSS colour string as (sRGB in [0, 1], alpha)."""
    c = NAMED.get(color.strip().lower(), color.strip())
    if c.startswith("#"):
        return np.array(hex_to_rgb(c)) / 255.0, 1.0
    m = _RGB.match(c)
    if not m:
        raise ValueError(f"{color!r} is not a colour this checker reads (hex, rgb(), rgba() or {sorted(NAMED)}).")
    parts = [float(p) for p in m.group(1).split(",")]
    if len(parts) not in (3, 4):
        raise ValueError(f"{color!r} needs three channels (and an optional alpha).")
    return np.array(parts[:3]) / 255.0, parts[3] if len(parts) == 4 else 1.0


def to_rgb(color, background="#ffffff") -> np.ndarray:
    """sRGB in [0, 1] as it shows on `background`: a translucent rgba() is composited over it (in sRGB values, as
    browsers blend), an opaque colour or an array passes through."""
    if not isinstance(color, str):
        return np.asarray(color, dtype=float)
    rgb, alpha = _parse(color)
    if alpha >= 1.0:
        return rgb
    return alpha * rgb + (1.0 - alpha) * to_rgb(background)


def srgb_to_linear(rgb) -> np.ndarray:
    """Undo the sRGB transfer curve (WCAG 2.x uses the same formula; its 0.03928 and 0.04045 agree on 8-bit)."""
    c = np.asarray(rgb, dtype=float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(lin) -> np.ndarray:
    """Apply the sRGB transfer curve, clipping to the displayable range first."""
    c = np.clip(np.asarray(lin, dtype=float), 0.0, 1.0)
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)


def relative_luminance(color, background="#ffffff") -> float:
    """WCAG 2.x relative luminance: 0.2126 R + 0.7152 G + 0.0722 B of the linearised channels."""
    return float(srgb_to_linear(to_rgb(color, background)) @ np.array([0.2126, 0.7152, 0.0722]))


def contrast_ratio(fg, bg) -> float:
    """WCAG 2.x contrast (L_light + 0.05) / (L_dark + 0.05), from 1 to 21; a translucent fg is seen over bg."""
    a, b = relative_luminance(fg, bg), relative_luminance(bg)
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


def simulate_cvd(rgb, kind: str) -> np.ndarray:
    """The sRGB colour(s) a dichromat of `kind` sees (Machado 2009, severity 1.0): the matrix acts on linear RGB and
    the result is clipped to [0, 1]. kind "normal" returns the colour unchanged."""
    c = to_rgb(rgb)
    if kind == "normal":
        return c
    if kind not in MACHADO_2009:
        raise ValueError(f"unknown colour-vision kind {kind!r}: one of normal, {', '.join(CVD_KINDS)}.")
    return linear_to_srgb(srgb_to_linear(c) @ MACHADO_2009[kind].T)


def srgb_to_lab(rgb) -> np.ndarray:
    """CIELAB (L*, a*, b*) relative to D65 white, via linear RGB and XYZ."""
    xyz = srgb_to_linear(to_rgb(rgb)) @ _RGB_TO_XYZ.T / _D65
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


def delta_e_lab(lab1, lab2) -> np.ndarray:
    """CIEDE2000 between CIELAB colours (Sharma, Wu & Dalal 2005, kL = kC = kH = 1)."""
    L1, a1, b1 = np.moveaxis(np.asarray(lab1, dtype=float), -1, 0)
    L2, a2, b2 = np.moveaxis(np.asarray(lab2, dtype=float), -1, 0)
    c_bar = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(c_bar ** 7 / (c_bar ** 7 + 25.0 ** 7)))  # a* is stretched for near-neutral colours
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1p = np.degrees(np.arctan2(b1, a1p)) % 360
    h2p = np.degrees(np.arctan2(b2, a2p)) % 360
    dL, dC = L2 - L1, c2p - c1p
    dh = h2p - h1p
    dh = np.where(dh > 180, dh - 360, np.where(dh < -180, dh + 360, dh))
    dh = np.where(c1p * c2p == 0, 0.0, dh)  # a grey has no hue
    dH = 2 * np.sqrt(c1p * c2p) * np.sin(np.radians(dh / 2))
    L_bar, C_bar = (L1 + L2) / 2, (c1p + c2p) / 2
    hsum = h1p + h2p
    h_bar = np.where(np.abs(h1p - h2p) > 180, np.where(hsum < 360, hsum + 360, hsum - 360), hsum) / 2
    h_bar = np.where(c1p * c2p == 0, hsum, h_bar)
    t = (1 - 0.17 * np.cos(np.radians(h_bar - 30)) + 0.24 * np.cos(np.radians(2 * h_bar))
         + 0.32 * np.cos(np.radians(3 * h_bar + 6)) - 0.20 * np.cos(np.radians(4 * h_bar - 63)))
    s_l = 1 + 0.015 * (L_bar - 50) ** 2 / np.sqrt(20 + (L_bar - 50) ** 2)
    s_c, s_h = 1 + 0.045 * C_bar, 1 + 0.015 * C_bar * t
    r_t = (-2 * np.sqrt(C_bar ** 7 / (C_bar ** 7 + 25.0 ** 7))
           * np.sin(np.radians(60 * np.exp(-(((h_bar - 275) / 25) ** 2)))))  # the blue region's hue/chroma tilt
    return np.sqrt((dL / s_l) ** 2 + (dC / s_c) ** 2 + (dH / s_h) ** 2 + r_t * (dC / s_c) * (dH / s_h))


def delta_e(c1, c2, kind: str = "normal") -> float:
    """CIEDE2000 colour difference of two colours (CIELAB, D65) as seen with `kind` of colour vision. About 1 is
    a just-noticeable difference between large patches side by side; thin lines and small marks need far more."""
    return float(delta_e_lab(srgb_to_lab(simulate_cvd(c1, kind)), srgb_to_lab(simulate_cvd(c2, kind))))


# -- numbers printed on heatmap cells -----------------------------------------------------------------------------
TEXT_ON_DARK, TEXT_ON_LIGHT = "#ffffff", "#000000"  # one of the two is ≥ 4.58:1 on any colour (WCAG arithmetic)


def scale_colours(z: np.ndarray, colorscale, zmin: float, zmax: float) -> np.ndarray:
    """The colour of each cell, sRGB in [0, 1], shape z.shape + (3,): z mapped to [0, 1] between zmin and zmax and
    blended per channel between the scale's stops (as plotly.js does). `colorscale`: [(stop, colour), ...]."""
    u = np.clip((np.asarray(z, dtype=float) - zmin) / ((zmax - zmin) or 1.0), 0.0, 1.0)
    stops = np.array([float(s) for s, _ in colorscale])
    rgb = np.array([to_rgb(c) for _, c in colorscale])
    return np.stack([np.interp(u, stops, rgb[:, i]) for i in range(3)], axis=-1)


def dark_text(cells: np.ndarray) -> np.ndarray:
    """Per cell (sRGB rows, (..., 3)): True where black text reads better than white (the higher WCAG contrast)."""
    lum = 0.2126 * srgb_to_linear(cells)[..., 0] + 0.7152 * srgb_to_linear(cells)[..., 1] \
        + 0.0722 * srgb_to_linear(cells)[..., 2]
    return (lum + 0.05) / 0.05 > 1.05 / (lum + 0.05)
