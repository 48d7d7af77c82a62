"""The export toolbar under every figure (static/exports.js), in English. Shown in the page, in
the exported HTML file's header and in the file a visitor downloads."""
STRINGS = {
    "export.toolbar": "Export this figure",
    "export.png": "Download the figure as a PNG image",
    "export.html": "Download the figure as an interactive HTML file that opens offline",
    "export.csv": "Download the figure's data as CSV",
    "export.failed": "The export did not work: {error}",
    "export.model": "Model",
    "export.settings": "Settings",
    "export.link": "Link to this view",
    "export.exported": "Exported",
    "export.source": "Made with Transformer Explorer; the data are those of the run shown in the page.",
}
