"""下一个词元视图、logit lens 与课堂猜词游戏（explorer/nexttoken），中文。"""
STRINGS = {
    "next.err.guess": "猜测应是一个不超过 {limit} 个字符、分词器能拼写出的词。",
}
