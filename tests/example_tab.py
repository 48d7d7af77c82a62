"""A tab written exactly as explorer/ui/__init__.py tells tab authors to write one; the shell
tests build an app with it to check that the contract works end to end."""
import gradio as gr

from explorer.ui import TabContext

TITLE = "example.tab"
STRINGS = {
    "example.tab": {"en": "Example", "zh": "示例"},
    "example.prompt": {"en": "Prompt", "zh": "提示词"},
    "example.run": {"en": "Count tokens", "zh": "统计词元"},
    "example.count": {"en": "{n} tokens for {model}", "zh": "{model} 切出 {n} 个词元"},
}


def build(ctx: TabContext) -> None:
    prompt = gr.Textbox(label=ctx.t("example.prompt"), elem_id="example-prompt")
    run = gr.Button(ctx.t("example.run"), elem_id="example-run")
    count = gr.Markdown(elem_id="example-count")

    def count_tokens(model_name, lang, text, progress=gr.Progress()):
        if not isinstance(text, str) or not text.strip():
            raise gr.Error("Type a prompt first.")
        loaded = ctx.load(model_name, progress)
        n = len(loaded.tokenizer(text)["input_ids"])
        return ctx.t.text("example.count", lang, n=n, model=loaded.config.n_layers)

    run.click(count_tokens, [ctx.model, ctx.lang, prompt], count,
              api_name="example_count", **ctx.model_event)
