"""Pairwise argument-quality judges (seed 000): prompts, few-shot selection, judge modes,
runs over Webis-ArgQuality-20 and their evaluation against the experts."""
