"""The Gradio app (``m3agent app``, installed with the ``[app]`` extra): layout only; the logic is
:mod:`m3agent.workspace`'s."""
