"""Conversations 7-12 of the labelled conversation set (written for famulus).

Same format as part1: "TAG|S: text", S is O (owner) or F (friend).
"""

CONVERSATIONS = [
    {
        "owner": "Noah",
        "friend": "Grace",
        "sessions": [
            (
                "2023-02-11",
                [
                    "F: Noah, are you still doing the early gym sessions?",
                    "gym|O: Five in the morning, three days a week. I'm trying to get strong enough for a triathlon.",
                    "swim|O: The swimming part scares me, I only learned as an adult last year.",
                    "F: You'll get there.",
                    "grace_job|F: I just started as a sound engineer for a theatre in Glasgow.",
                    "O: That's your dream job!",
                ],
            ),
            (
                "2023-03-04",
                [
                    "F: How's training?",
                    "bike|O: I bought a second-hand road bike from a retired postman for 300 pounds.",
                    "F: Bargain.",
                    "play|F: Our first play, a Scottish version of Macbeth, premieres on March 25.",
                    "coffee|O: I've given up coffee for the training, switched to rooibos, I'm grumpy.",
                ],
            ),
            (
                "2023-04-01",
                [
                    "premiere|F: The premiere went well, except one microphone died during the witches' scene.",
                    "O: Did anyone notice?",
                    "F: Only me, I think.",
                    "crash|O: I fell off the bike on a wet road on Tuesday and sprained my wrist.",
                    "F: Oh no, does that stop your training?",
                    "O: Only the cycling, I can still run.",
                ],
            ),
            (
                "2023-06-18",
                [
                    "tri|O: I finished the triathlon in Edinburgh yesterday! Last in my age group but I finished.",
                    "F: Finishing is what counts!",
                    "celebr|O: Celebrated with a huge pizza and my first coffee in four months.",
                    "grace_tour|F: The theatre is sending me on a tour with the play to Ireland in July.",
                    "O: Bring me back some Irish whiskey.",
                    "teetotal|F: You don't even drink! You told me you've been sober for six years.",
                    "O: Fine, a tin of biscuits then.",
                ],
            ),
        ],
        "questions": [
            ("single", "Who sold me my bicycle?", ["bike"]),
            ("single", "Where does Grace work?", ["grace_job"]),
            ("single", "What did I drink instead of my usual morning cup?", ["coffee"]),
            ("single", "What went wrong on opening night?", ["premiere"]),
            (
                "multi-hop",
                "Which of the three disciplines of my race was the hardest for me, and why?",
                ["swim", "gym"],
            ),
            (
                "multi-hop",
                "What injury interrupted my cycling practice before the race?",
                ["crash"],
            ),
            (
                "multi-hop",
                "How did I break my caffeine break after the event?",
                ["celebr", "coffee"],
            ),
            ("temporal", "When did I complete the triathlon?", ["tri"]),
            ("temporal", "When did the Macbeth production premiere?", ["play", "premiere"]),
            ("temporal", "When did I hurt my wrist?", ["crash"]),
            ("temporal", "Where is Grace travelling in July?", ["grace_tour"]),
            ("inference", "Is a bottle of wine a good birthday present for me?", ["teetotal"]),
            ("inference", "Would I sign up for an open-water swim across a lake?", ["swim", "tri"]),
        ],
    },
    {
        "owner": "Chloe",
        "friend": "Mateo",
        "sessions": [
            (
                "2023-05-06",
                [
                    "F: Chloe, how's the little one?",
                    "baby|O: Iris is three months old now and finally sleeps four hours in a row.",
                    "O: I feel human again.",
                    "leave|O: I'm on parental leave until October, then back to the architecture office.",
                    "mateo_move|F: We're moving to Lyon in June, my wife got a job at the university hospital.",
                    "O: I'll miss having you nearby.",
                ],
            ),
            (
                "2023-06-24",
                [
                    "F: Lyon is beautiful, the flat is tiny though.",
                    "french|F: My French is terrible, I ordered a jug of tap water and got a carafe of wine.",
                    "O: There are worse mistakes.",
                    "bday|O: Iris had her first swim class on Tuesday, she loved the water.",
                    "peanut|O: We also found out she's allergic to peanuts, the paediatrician confirmed it.",
                ],
            ),
            (
                "2023-09-02",
                [
                    "visit_lyon|O: We're visiting you in Lyon over the second weekend of September!",
                    "F: Finally! I'll take you to a bouchon.",
                    "O: Nothing with peanuts for the baby please.",
                    "F: Of course.",
                    "mateo_job|F: I started teaching Spanish at a language school, two evenings a week.",
                ],
            ),
            (
                "2023-10-21",
                [
                    "back|O: First week back at work, the office renovated a whole floor while I was gone.",
                    "daycare|O: Iris goes to a daycare around the corner three days, my mother takes the other two.",
                    "F: How does she like it?",
                    "O: She cries at drop-off and laughs at pick-up.",
                    "bouchon|F: Still thinking about that dinner we had in Lyon, your husband ate three desserts.",
                ],
            ),
        ],
        "questions": [
            ("single", "What is my baby's name?", ["baby"]),
            ("single", "Why did Mateo's family relocate?", ["mateo_move"]),
            ("single", "What does Mateo teach?", ["mateo_job"]),
            ("single", "Who looks after my daughter when she is not at nursery?", ["daycare"]),
            (
                "multi-hop",
                "What must the restaurant avoid when we eat out with my daughter in France?",
                ["peanut", "visit_lyon"],
            ),
            (
                "multi-hop",
                "What did Mateo get when he asked for water, and in which city?",
                ["french"],
            ),
            (
                "multi-hop",
                "Which office did I return to after my leave, and what had changed there?",
                ["leave", "back"],
            ),
            ("temporal", "When does my parental leave end?", ["leave"]),
            ("temporal", "When were we in Lyon visiting Mateo?", ["visit_lyon"]),
            ("temporal", "When did Iris go to her first swimming lesson?", ["bday"]),
            ("temporal", "When did Mateo move to France?", ["mateo_move"]),
            ("inference", "Can I give my daughter a satay snack?", ["peanut"]),
            ("inference", "Is Mateo fluent in French?", ["french"]),
        ],
    },
    {
        "owner": "Olu",
        "friend": "Hannah",
        "sessions": [
            (
                "2022-11-05",
                [
                    "F: Olu! Did you get the part in the choir?",
                    "choir|O: I did, I'm the new bass in the community gospel choir.",
                    "O: We sing at the Christmas concert in the cathedral.",
                    "hannah_pet|F: We adopted two guinea pigs named Salt and Pepper.",
                    "O: My nephew will want to meet them.",
                    "nephew|O: Kayode is nine and obsessed with every animal that exists.",
                ],
            ),
            (
                "2022-12-18",
                [
                    "carol|O: The cathedral concert was yesterday, I had a solo in the second carol and didn't forget the words.",
                    "F: I cried, it was so moving.",
                    "hannah_work|F: I'm quitting my job at the bank in January to retrain as a primary school teacher.",
                    "O: You'll be brilliant with kids.",
                    "sugar|O: I'm cutting out sugar after the holidays, the doctor said my blood pressure is too high.",
                ],
            ),
            (
                "2023-02-25",
                [
                    "F: How's the no-sugar life?",
                    "O: Hard. I dream about jollof with fried plantain and puff-puff.",
                    "weight|O: But I've lost six kilos and my blood pressure is back to normal.",
                    "course|F: The teacher training is intense, I'm doing my placement at a school in Brixton.",
                    "zoo|O: Took Kayode to London Zoo last Sunday, he named every lizard.",
                ],
            ),
            (
                "2023-04-15",
                [
                    "nigeria|O: I'm flying to Lagos in May for my grandfather's ninetieth birthday.",
                    "F: Ninety! Is there a big party?",
                    "O: Three hundred guests and a live band.",
                    "hannah_class|F: I got my first class, year 3, twenty-eight kids.",
                    "O: Good luck with the noise.",
                ],
            ),
        ],
        "questions": [
            ("single", "What voice do I sing in the choir?", ["choir"]),
            ("single", "What are the names of Hannah's pets?", ["hannah_pet"]),
            ("single", "How much weight did I lose?", ["weight"]),
            ("single", "Where is Hannah doing her teacher placement?", ["course"]),
            ("multi-hop", "Why did I change my diet, and did it work?", ["sugar", "weight"]),
            (
                "multi-hop",
                "Which young relative of mine would love Hannah's animals and why?",
                ["nephew", "hannah_pet"],
            ),
            (
                "multi-hop",
                "What career did Hannah leave and what did she become?",
                ["hannah_work", "hannah_class"],
            ),
            ("temporal", "When did I sing my solo?", ["carol"]),
            ("temporal", "When will I be in Nigeria?", ["nigeria"]),
            ("temporal", "When did Hannah leave the bank?", ["hannah_work"]),
            ("temporal", "When did I go to the zoo with Kayode?", ["zoo"]),
            (
                "inference",
                "Should I have a slice of chocolate cake at the office party in March?",
                ["sugar"],
            ),
            ("inference", "Would Kayode enjoy a reptile house?", ["nephew", "zoo"]),
            (
                "inference",
                "Am I comfortable performing in front of an audience?",
                ["carol", "choir"],
            ),
        ],
    },
    {
        "owner": "Ines",
        "friend": "Paul",
        "sessions": [
            (
                "2023-07-01",
                [
                    "F: Ines, how was the move to Berlin?",
                    "flat2|O: Exhausting. My flat is on the fifth floor and there's no lift.",
                    "O: At least the view over the Spree is great.",
                    "paul_van|F: I bought an old VW van and I'm converting it to a camper.",
                    "O: Wow, where will you drive?",
                    "F: Portugal in the autumn, following the coast.",
                ],
            ),
            (
                "2023-07-29",
                [
                    "techno|O: I went to Berghain for the first time, got in on the third try.",
                    "F: And?",
                    "O: Danced until Sunday noon, slept all Monday.",
                    "back_pain|F: I hurt my back installing the bed in the van, I'm lying on the floor now.",
                    "coding|O: My coding bootcamp starts next week, twelve weeks of Python and data.",
                ],
            ),
            (
                "2023-10-14",
                [
                    "graduate|O: I finished the bootcamp yesterday! My final project predicted bike-sharing demand.",
                    "F: Congrats! Any job interviews?",
                    "interview|O: Two, one with a transport company and one with an energy startup.",
                    "portugal|F: I'm in Sagres right now, surfing every morning.",
                    "O: Jealous.",
                    "paul_cold|F: The water is colder than I expected, I need a thicker wetsuit.",
                ],
            ),
            (
                "2023-11-11",
                [
                    "hired|O: I took the job at the energy startup, I forecast solar power output.",
                    "F: Perfect fit.",
                    "O: And they have an office dog!",
                    "paul_home|F: Driving back home next week, the van made it 4000 kilometres.",
                    "knees|O: I'm moving to a ground floor flat in December, my knees hate the five flights of stairs.",
                ],
            ),
        ],
        "questions": [
            ("single", "Which club did I finally get into?", ["techno"]),
            ("single", "What does my new job involve?", ["hired"]),
            ("single", "Where was Paul surfing?", ["portugal"]),
            ("single", "What was my final project about?", ["graduate"]),
            ("multi-hop", "Why am I moving out of my Berlin apartment?", ["knees", "flat2"]),
            (
                "multi-hop",
                "Which company hired me after my training, and what did I study there?",
                ["hired", "coding"],
            ),
            (
                "multi-hop",
                "What hurt Paul while preparing his vehicle, and what was the vehicle?",
                ["back_pain", "paul_van"],
            ),
            ("temporal", "When did I finish the bootcamp?", ["graduate"]),
            ("temporal", "When did my coding course begin?", ["coding"]),
            ("temporal", "How far did Paul drive on his trip?", ["paul_home"]),
            ("temporal", "When am I moving to a new flat?", ["knees"]),
            ("inference", "Would I like working with animals around at work?", ["hired"]),
            ("inference", "Is Paul an adventurous person?", ["paul_van", "portugal"]),
        ],
    },
    {
        "owner": "Yara",
        "friend": "Ben",
        "sessions": [
            (
                "2023-01-21",
                [
                    "F: Yara, are you still at the newspaper?",
                    "paper_job|O: Yes, I cover local politics now, lots of council meetings.",
                    "O: It's less boring than it sounds.",
                    "ben_bake|F: I've started a sourdough starter, I named it Doughlene.",
                    "gluten|O: I'd love to try your bread but I have coeliac disease, so no wheat for me.",
                    "F: I'll try a buckwheat one for you then.",
                ],
            ),
            (
                "2023-02-18",
                [
                    "award|O: My story about the closed swimming pool won a regional journalism prize.",
                    "F: Amazing, congrats!",
                    "pool|O: And the council voted to reopen the pool in summer because of it.",
                    "ben_flat|F: I'm moving in with my girlfriend Anna in March.",
                ],
            ),
            (
                "2023-04-08",
                [
                    "F: Moving day was chaos, Anna has four hundred books.",
                    "trip_yara|O: I spent Easter in Beirut with my grandparents, first time in six years.",
                    "F: How was it?",
                    "O: Emotional. My grandmother cooked for three days straight.",
                    "fear_fly|O: The flight back was bumpy, I hate flying, I held the armrest the whole time.",
                ],
            ),
            (
                "2023-06-24",
                [
                    "reopen|O: The pool reopened last Saturday and the mayor thanked me in his speech.",
                    "F: That's your story changing the town!",
                    "engaged|F: Anna and I got engaged on a hike in the Lake District.",
                    "O: Oh my god, congratulations!",
                    "book|O: I'm also writing a book about small-town politics, I write every morning before work.",
                ],
            ),
        ],
        "questions": [
            ("single", "What beat do I report on?", ["paper_job"]),
            ("single", "What did Ben call his starter?", ["ben_bake"]),
            ("single", "Who is Ben's fiancée?", ["ben_flat", "engaged"]),
            ("single", "What project am I working on before my day job?", ["book"]),
            ("multi-hop", "What did my prize-winning article change in town?", ["award", "pool"]),
            ("multi-hop", "Why would Ben bake a buckwheat loaf for me?", ["gluten"]),
            ("multi-hop", "Where did Ben propose and to whom?", ["engaged"]),
            ("temporal", "When did I visit Lebanon?", ["trip_yara"]),
            ("temporal", "When did the pool reopen?", ["reopen"]),
            ("temporal", "When did Ben move in with his girlfriend?", ["ben_flat"]),
            ("temporal", "When did I win the prize?", ["award"]),
            ("inference", "Can I eat a regular croissant?", ["gluten"]),
            (
                "inference",
                "Would I prefer taking the train over a plane for a trip to Vienna?",
                ["fear_fly"],
            ),
            ("inference", "Do I care about my local community?", ["paper_job", "award"]),
        ],
    },
    {
        "owner": "Lucas",
        "friend": "Mei",
        "sessions": [
            (
                "2022-08-06",
                [
                    "F: Lucas, how's the farm?",
                    "farm|O: The apple harvest is early this year because of the heat, we start picking next week.",
                    "bees|O: I also set up three beehives behind the barn.",
                    "F: Do you get stung a lot?",
                    "O: Twice so far, it's part of the job.",
                    "mei_phd|F: I'm finishing my PhD on coral reefs in Townsville, writing up now.",
                ],
            ),
            (
                "2022-09-24",
                [
                    "cider|O: We pressed our first batch of cider, 400 litres.",
                    "F: You'll have to ship me a bottle to Australia.",
                    "honey|O: The bees made about twenty jars of honey, more than I expected.",
                    "mei_move|F: I accepted a postdoc in Okinawa starting in January.",
                    "O: Japan! Do you speak Japanese?",
                    "F: Not a word yet.",
                ],
            ),
            (
                "2023-01-28",
                [
                    "okinawa|F: I arrived in Okinawa two weeks ago, the reef here is incredible.",
                    "O: Send photos!",
                    "storm|O: A storm blew down two old apple trees last Tuesday, we're replanting in spring.",
                    "shoulder|O: I hurt my shoulder clearing the branches, so I can't lift much.",
                    "F: Rest it please.",
                ],
            ),
            (
                "2023-04-15",
                [
                    "replant|O: We planted twelve new trees this month, an old variety called Boskoop.",
                    "F: How's the shoulder?",
                    "O: Better after physio, I can carry crates again.",
                    "mei_lang|F: I'm taking Japanese lessons three times a week, I can order ramen now.",
                    "market|O: I started selling honey and cider at the Saturday farmers' market.",
                ],
            ),
        ],
        "questions": [
            ("single", "What fruit do I grow?", ["farm"]),
            ("single", "How much cider did we make?", ["cider"]),
            ("single", "What does Mei study?", ["mei_phd"]),
            ("single", "Which variety did we plant?", ["replant"]),
            (
                "multi-hop",
                "Why did we need new trees, and which kind did we choose?",
                ["storm", "replant"],
            ),
            (
                "multi-hop",
                "What products do I sell at the market, and where do they come from?",
                ["market", "honey"],
            ),
            (
                "multi-hop",
                "What injury did I get from the storm cleanup, and has it healed?",
                ["shoulder"],
            ),
            ("temporal", "When did Mei move to Japan?", ["mei_move", "okinawa"]),
            ("temporal", "When did the storm damage the orchard?", ["storm"]),
            ("temporal", "When did we press our first cider?", ["cider"]),
            ("temporal", "When did the apple picking begin in 2022?", ["farm"]),
            ("inference", "Would I be afraid of a wasp nest near the house?", ["bees"]),
            (
                "inference",
                "Could Mei order food in a restaurant in Tokyo by spring 2023?",
                ["mei_lang"],
            ),
        ],
    },
]
