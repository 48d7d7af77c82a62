"""每张图下方的导出工具栏（static/exports.js），中文。显示在页面中、导出的 HTML 文件页眉中以及
访问者下载的文件中。"""
STRINGS = {
    "export.toolbar": "导出此图",
    "export.png": "将此图下载为 PNG 图片",
    "export.html": "将此图下载为可离线打开的交互式 HTML 文件",
    "export.csv": "将此图的数据下载为 CSV 文件",
    "export.failed": "导出失败：{error}",
    "export.model": "模型",
    "export.settings": "设置",
    "export.link": "此视图的链接",
    "export.exported": "导出时间",
    "export.source": "由 Transformer Explorer 生成；数据来自页面上显示的那次运行。",
}
