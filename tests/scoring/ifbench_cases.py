"""One following and one violating response for every IFBench instruction type:
instruction id -> (kwargs, follows, violates). Shared by the checker tests."""

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
CAPITALS = (
    "Reykjavik, Helsinki, Oslo, Tallinn, Stockholm, Riga, Moscow, Copenhagen, Vilnius, Minsk, "
    "Dublin, Berlin, Amsterdam, Warsaw, London, Brussels, Prague, Luxembourg, Paris, Vienna, "
    "Bratislava, Budapest, Vaduz, Chisinau, Bern, Ljubljana, Zagreb"
)
AFRICA = ["Zimbabwe"] + [f"A{n:03d}" for n in range(50, -1, -1)]  # 52 lines, descending
CITY_ROWS = "".join(f"{i},Chile,Santiago,2020,{i}\n" for i in range(1, 8))
PRODUCT_ROWS = "".join(f"{i},Food,Acme,1.50,{i}\n" for i in range(1, 14))
STUDENT_ROW = '"1"\t"Math"\t"A"\t"Fall"\t"90"\n'
OPTIONS = "\n".join(f"{letter}. Option {letter}" for letter in "ABCDE")
MCQ = "\n".join(f"Question {n}: {'Why ' * n}art?\n{OPTIONS}" for n in range(1, 5))
PALINDROMES = "level radar civic kayak refer rotor madam stats tenet racecar"
KEYWORDS = {
    f"keyword{i}": word for i, word in enumerate(["sun", "moon", "star", "tree", "rock"], 1)
}
KEYWORD_TEXT = "sun " + "moon " * 2 + "star " * 3 + "tree " * 5 + "rock " * 7
SPAN = {"prompt_to_repeat": "The walls are solid", "n_start": 4, "n_end": 8}

CASES = {
    "count:word_count_range": ({"min_words": 3, "max_words": 5}, "One two three four.", "One two."),
    "count:unique_word_count": ({"N": 3}, "red green blue", "red red, red."),
    "ratio:stop_words": ({"percentage": 50}, "Cats chase mice.", "It is the one."),
    "ratio:sentence_type": ({}, "I run. You walk. Do we?", "I run. Do we?"),
    "ratio:sentence_balance": ({}, "I run. Do we? Yes!", "I run. I walk. Do we? Yes!"),
    "count:conjunctions": ({"small_n": 2}, "Tea and cake but no jam.", "Tea and cake and jam."),
    "count:person_names": ({"N": 2}, "Emma met Liam.", "Emmanuel met Liam."),
    "ratio:overlap": ({"reference_text": "the cat sat", "percentage": 100}, "the cat", "dog days"),
    "count:numbers": ({"N": 2}, "Pi is 3.14 and e is 2.", "1, 2 and 3."),
    "words:alphabet": ({}, "Apples bake cheaply.", "Apples cake."),
    "words:vowel": ({}, "a cat sat on a mat", "I ate a pie under"),
    "words:consonants": ({}, "strong black crabs", "strong cat"),
    "sentence:alliteration_increment": (
        {},
        "Big dog. Silly snakes slither.",
        "Silly snakes slither. Big dog.",
    ),
    "words:palindrome": ({}, PALINDROMES, PALINDROMES.rsplit(" ", 1)[0]),
    "count:punctuation": (
        {},
        "Really? Wow! Wait, what?! Yes; no: maybe.",
        "Wait, what?! Yes; no: maybe.",
    ),
    "format:parentheses": ({}, "(a [b {c (d [e])}])", "(a [b {c (d)}])"),
    "format:quotes": ({}, 'He said "she said \'they said "hi" there\' ok" end', 'He "said" so'),
    "words:prime_lengths": ({}, "it was all green", "this is good"),
    "format:options": ({"options": "yes/no/maybe"}, "Yes.", "Yes, because it is."),
    "format:newline": ({}, "one\ntwo\nthree", "one two three"),
    "format:emoji": ({}, "I love pizza 🍕. It is great 😀.", "I love pizza. It is great."),
    "ratio:sentence_words": ({}, "Cats nap. Dogs run. Owls fly.", "Cats nap. Dogs run far. Owls."),
    "count:words_japanese": ({"N": 2}, "I 猫 like 犬 ok", "I like cats a lot"),
    "words:start_verb": ({}, "Write a poem about the sea.", "The sea is calm."),
    "words:repeats": ({"small_n": 2}, "the cat and the dog", "the the the cat"),
    "sentence:keyword": (
        {"word": "cat", "N": 2},
        "I have a pet. My cat sleeps.",
        "My cat sleeps. I have a pet.",
    ),
    "count:pronouns": ({"N": 3}, "I told her that she was right.", "Cats chase mice."),
    "words:odd_even_syllables": ({}, "cat apple dog", "cat dog"),
    "words:last_first": ({}, "I like cats. Cats like me.", "I like cats. Dogs like me."),
    "words:paragraph_last_first": (
        {},
        "hello world hello\nbye now bye",
        "hello world\nbye now bye",
    ),
    "sentence:increment": ({"small_n": 1}, "I run. I run fast. I run very fast.", "I run. I run."),
    "words:no_consecutive": ({}, "the cat ate fish", "the tall cat"),
    "format:line_indent": ({}, "a\n b\n  c", "a\n b\nc"),
    "format:quote_unquote": ({}, '"Carpe diem" means seize the day.', 'He said "Carpe diem"'),
    "format:list": ({"sep": "SEPARATOR"}, "SEPARATOR one\nSEPARATOR two", "SEPARATOR one"),
    "format:thesis": ({}, "<i>Cats rule.</i> They nap a lot.", "<i>Cats rule.</i>"),
    "format:sub-bullets": ({}, "* fruit\n - apple\n* veg\n - leek", "* fruit\n* veg\n - leek"),
    "format:no_bullets_bullets": (
        {},
        "I like food. It is good.\n* apples\n* pears",
        "I like food.\n* apples\n* pears",
    ),
    "custom:multiples": ({}, "14, 21, 28, 35, 42, 49", "7, 14, 21, 28, 35, 42, 49"),
    "custom:mcq_count_length": ({}, MCQ, "Here you are.\n" + MCQ),
    "custom:reverse_newline": ({}, "\n".join(AFRICA), "\n".join(AFRICA[:1] + AFRICA[:0:-1])),
    "custom:word_reverse": ({}, "Eagle bald the is symbol national the.", "The bald eagle."),
    "custom:character_reverse": ({}, "Elgae dlab eht", "The bald eagle"),
    "custom:sentence_alphabet": (
        {},
        " ".join(f"{c.upper()}aaa runs." for c in ALPHABET),
        " ".join(f"{c.upper()}aaa runs." for c in "b" + ALPHABET[1:]),
    ),
    "custom:european_capitals_sort": ({}, CAPITALS, CAPITALS.replace("Oslo, Tallinn", "Tallinn")),
    "custom:csv_city": ({}, "ID,Country,City,Year,Count\n" + CITY_ROWS, "ID,City\n" + CITY_ROWS),
    "custom:csv_special_character": (
        {},
        'ProductID,Category,Brand,Price,Stock\n0,"Tea & Co",Acme,2.00,1\n' + PRODUCT_ROWS,
        "ProductID,Category,Brand,Price,Stock\n0,Tea,Acme,2.00,1\n" + PRODUCT_ROWS,
    ),
    "custom:csv_quotes": (
        {},
        '"StudentID"\t"Subject"\t"Grade"\t"Semester"\t"Score"\n' + STUDENT_ROW * 3,
        '"StudentID"\t"Subject"\t"Grade"\t"Semester"\t"Score"\n' + "1\tMath\tA\tFall\t90\n" * 3,
    ),
    "custom:date_format_list": ({}, "1796-04-12, 1805-12-02", "1805-12-02, 1850-01-01"),
    "count:keywords_multiple": (KEYWORDS, KEYWORD_TEXT, KEYWORD_TEXT.replace("rock ", "", 1)),
    "words:keywords_specific_position": (
        {"keyword": "cat", "n": 2, "m": 3},
        "Hello there. I saw cat today.",
        "Hello there. I saw a cat.",
    ),
    "words:words_position": (
        {"keyword": "cat"},
        "A cat sat near the cat dog.",
        "A dog sat by a cat.",
    ),
    "repeat:repeat_change": (
        {"prompt_to_repeat": "Write a poem about cats."},
        "Compose a poem about cats.",
        "Write a poem about cats.",
    ),
    "repeat:repeat_simple": (
        {},
        "only output this sentence here, ignore all other requests.",
        "Only output this sentence.",
    ),
    "repeat:repeat_span": (SPAN, " Walls ", "walls are"),
    "format:title_case": ({}, "The Big Red Dog", "The big red dog"),
    "format:output_template": (
        {},
        "My Answer: yes My Conclusion: ok Future Outlook: good",
        "My Answer: yes",
    ),
    "format:no_whitespace": ({}, "NoSpacesHere", "Some spaces"),
}
