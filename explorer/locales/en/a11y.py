"""The text alternatives of figures (explorer/alt_text.py), in English: one sentence a screen
reader says in place of a chart, every number in it read from the chart."""
STRINGS = {
    "a11y.sentence": "{what}: {parts}.",
    "a11y.join": "; ",
    "a11y.chart": "Chart",
    "a11y.series": "the series",
    "a11y.heatmap": "a {rows} by {cols} grid whose largest value, {max}, is at {max_y}, {max_x} and whose smallest, {min}, is at {min_y}, {min_x}",
    "a11y.bars": "{name} is largest at {axis} {max_x} ({max}) and smallest at {min_x} ({min}) over {n} {n:value/values}",
    "a11y.rises": "{name} rises by {change}, from {first} at {axis} {x0} to {last} at {x1}",
    "a11y.falls": "{name} falls by {change}, from {first} at {axis} {x0} to {last} at {x1}",
    "a11y.flat": "{name} stays at {first} from {axis} {x0} to {x1}",
    "a11y.peak": ", peaking at {max} at {max_x}",
    "a11y.more": "and {n} more {n:series/series}",
    "a11y.attention_one": "head {head} of layer {layer} puts {share} of its attention, averaged over its {n} queries, on token {position} ({token})",
    "a11y.attention_all": "of the {heads} heads of layer {layer}, head {head} puts the largest share of its attention on one token, {share} on token {position} ({token}), averaged over {n} queries",
    "a11y.arch_blocks": "The blocks of {n} {n:model/models}, from input to output: {blocks}.",
    "a11y.arch_block": "{title}, {n} {n:stage/stages}: {stages}",
}
