//! Instruct models' chat templates (`tokenizer.chat_template` in a GGUF file, the Jinja
//! template of HF's `tokenizer_config.json`), for the one family nectar renders: **ChatML**, as
//! SmolLM2 writes it:
//!
//! ```text
//! {% for message in messages %}
//!   [{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nDEFAULT<|im_end|>\n' }}{% endif %}]
//!   {{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}
//! {% endfor %}
//! {% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}
//! ```
//!
//! (without the line breaks; the bracketed default system prompt is optional). That is, each
//! message becomes `<|im_start|>ROLE\nCONTENT<|im_end|>\n`, a conversation not opened by a
//! `system` message gets the template's default one first, and the generation prompt is
//! `<|im_start|>assistant\n`. There is no Jinja interpreter here: [`ChatTemplate::parse`]
//! recognises this template (whitespace outside the quoted strings and `\n` written as an
//! escape or a real line break both accepted) and refuses any other in one line, so a template
//! is never rendered wrongly.

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn new(role: &str, content: &str) -> Self {
        Message { role: role.into(), content: content.into() }
    }
}

/// A recognised ChatML template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatTemplate {
    /// The system message the template inserts when the first message is not one.
    pub default_system: Option<String>,
}

const LOOP_OPEN: &str = "{% for message in messages %}";
const SYSTEM_OPEN: &str = "{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n";
const SYSTEM_CLOSE: &str = "<|im_end|>\n' }}{% endif %}";
const MESSAGE: &str = "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}";
const LOOP_CLOSE: &str = "{% endfor %}";
const GENERATION: &str = "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// The template without whitespace outside single-quoted strings.
fn squeeze(t: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for c in t.chars() {
        if c == '\'' {
            quoted = !quoted;
        }
        if quoted || !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

impl ChatTemplate {
    /// Recognises `template` as the ChatML template above, or says why not.
    pub fn parse(template: &str) -> Result<Self, String> {
        let t = squeeze(&template.replace("\\n", "\n"));
        let refuse = || {
            format!(
                "unsupported chat template (only ChatML as in SmolLM2 is rendered): {:?}",
                template.chars().take(80).collect::<String>()
            )
        };
        let tail = [MESSAGE, LOOP_CLOSE, GENERATION].concat();
        if t == squeeze(&format!("{LOOP_OPEN}{tail}")) {
            return Ok(ChatTemplate { default_system: None });
        }
        // With a default system prompt X (inside a quoted string, so kept verbatim): the
        // squeezed template is squeeze(head) + X + the rest of squeeze(head + tail with X empty).
        let head = squeeze(&format!("{LOOP_OPEN}{SYSTEM_OPEN}"));
        let empty = squeeze(&format!("{LOOP_OPEN}{SYSTEM_OPEN}{SYSTEM_CLOSE}{tail}"));
        let rest = &empty[head.len()..];
        let system = t
            .strip_prefix(&head)
            .and_then(|x| x.strip_suffix(rest))
            .filter(|x| !x.contains('\''))
            .ok_or_else(refuse)?;
        let default_system = Some(system.to_string());
        Ok(ChatTemplate { default_system })
    }

    /// The prompt for `messages`, ending with the generation prompt when `add_generation_prompt`.
    pub fn render(&self, messages: &[Message], add_generation_prompt: bool) -> String {
        let mut s = String::new();
        if let (Some(sys), Some(first)) = (&self.default_system, messages.first()) {
            if first.role != "system" {
                s.push_str(&format!("<|im_start|>system\n{sys}<|im_end|>\n"));
            }
        }
        for m in messages {
            s.push_str(&format!("<|im_start|>{}\n{}<|im_end|>\n", m.role, m.content));
        }
        if add_generation_prompt {
            s.push_str("<|im_start|>assistant\n");
        }
        s
    }
}
