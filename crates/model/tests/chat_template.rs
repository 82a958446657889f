//! The ChatML renderer (`nectar_model::chat_template`): SmolLM2's template with and without its
//! default system prompt, loosely spaced or with escaped newlines; other templates refused.

use nectar_model::chat_template::{ChatTemplate, Message};


const SMOLLM2: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

#[test]
fn renders_smollm2() {
    let t = ChatTemplate::parse(SMOLLM2).unwrap();
    let sys = "You are a helpful AI assistant named SmolLM, trained by Hugging Face";
    assert_eq!(t.default_system.as_deref(), Some(sys));
    let got = t.render(&[Message::new("user", "Hi!")], true);
    assert_eq!(
        got,
        format!("<|im_start|>system\n{sys}<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n")
    );
    let got = t.render(&[Message::new("system", "Be brief."), Message::new("user", "Hi")], false);
    assert_eq!(got, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
    // Escaped newlines and spacing outside the strings do not matter.
    let loose = SMOLLM2.replace('\n', "\\n").replace("%}{%", "%}\n  {%");
    assert_eq!(ChatTemplate::parse(&loose).unwrap(), t);
    // Without the default system prompt.
    let bare = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
    assert_eq!(ChatTemplate::parse(bare).unwrap().default_system, None);
}

#[test]
fn other_templates_are_refused() {
    let llama3 = "{% for message in messages %}{{ '<|start_header_id|>' + message['role'] }}{% endfor %}";
    let e = ChatTemplate::parse(llama3).unwrap_err();
    assert!(e.starts_with("unsupported chat template (only ChatML"), "{e}");
    assert!(ChatTemplate::parse(&SMOLLM2.replace(" + '<|im_end|>' + '\n'}}", "}}")).is_err());
    assert!(ChatTemplate::parse("").is_err());
}
