//! Copy buttons: a button beside a value (an id, a body, a curl) that copies the text of the
//! element it names to the clipboard (`assets/console.js`). Rendered `hidden`: the script shows
//! them, so without JavaScript there is no dead button and the value stays plain selectable text.

use maud::{html, Markup};

/// A button copying the text of the element whose id is `target`; `what` names it for the title.
pub fn copy_button(target: &str, what: &str) -> Markup {
    html! {
        button.copy type="button" hidden data-copy=(target) title={ "Copy " (what) } { "Copy" }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_until_the_script_shows_it_and_names_its_value() {
        let html = copy_button("event-id", "the event id").into_string();
        assert_eq!(
            html,
            r#"<button class="copy" type="button" hidden data-copy="event-id" title="Copy the event id">Copy</button>"#
        );
    }
}
